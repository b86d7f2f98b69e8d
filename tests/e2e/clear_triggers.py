"""Test harness for tests/e2e/test_clear_rerun.py: pins the order of a clear's two halves.

`HoldKillOperator` (used by the clear DAGs in e2e_dags/e2e_clear.py) writes a marker file
when a try defers, and defers to `HeldKillTrigger`, whose `on_kill` waits for the next
try's marker before it runs the provider's `on_kill`. So the old trigger's kill comes only
after the new try has adopted or submitted, and deferred: the order the user saw (issue 29,
the kill one second after the adoption), made certain. Only ids and a path cross into the
triggerer; the triggerer imports this module through PYTHONPATH (the repository).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

HOLD_SECONDS = 240  # past this, the kill goes ahead anyway (the test then fails on its own)
_held: set[asyncio.Future] = set()


def marker(dag_id: str, try_number: int, home: str | Path | None = None) -> Path:
    """Written when try `try_number` defers; `<marker>.killed` once the previous try's held
    kill has run."""
    base = Path(home if home is not None else os.environ["AIRFLOW_HOME"])
    return base / "clear-markers" / f"{dag_id}.try{try_number}"


def wait_for_file(path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


class HeldKillTrigger(SparkK8sApplicationTrigger):
    def __init__(self, *, release_marker: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.release_marker = release_marker

    def serialize(self) -> tuple[str, dict[str, Any]]:
        path, kwargs = super().serialize()
        return path, {**kwargs, "release_marker": self.release_marker}

    async def on_kill(self) -> None:
        # Its own task behind a shield: the triggerer repeats the cancel while this waits.
        held = asyncio.ensure_future(self._kill_when_released())
        _held.add(held)
        held.add_done_callback(_held.discard)
        await asyncio.shield(held)

    async def _kill_when_released(self) -> None:
        await asyncio.to_thread(wait_for_file, Path(self.release_marker), HOLD_SECONDS)
        self.log.info("Kill released by %s", self.release_marker)
        await SparkK8sApplicationTrigger.on_kill(self)
        # The trigger's log may be closed by now (it ended when cancelled): tell the test here.
        await asyncio.to_thread(Path(f"{self.release_marker}.killed").touch)


class HoldKillOperator(SparkK8sSubmitOperator):
    def execute(self, context: Any) -> Any:
        self.hold_try_number = int(context["ti"].try_number)
        return super().execute(context)

    def execute_complete(self, context: Any, *args: Any, **kwargs: Any) -> Any:
        # A resume may defer again (an earlier try's event is ignored): same try number.
        self.hold_try_number = int(context["ti"].try_number)
        return super().execute_complete(context, *args, **kwargs)

    def defer(self, *, trigger: Any, method_name: str, kwargs: Any = None, timeout: Any = None):  # type: ignore[no-untyped-def,override]
        _, trigger_kwargs = trigger.serialize()
        this_try = marker(self.dag_id, self.hold_try_number)
        this_try.parent.mkdir(parents=True, exist_ok=True)
        this_try.touch()
        release = marker(self.dag_id, self.hold_try_number + 1)
        super().defer(
            trigger=HeldKillTrigger(release_marker=str(release), **trigger_kwargs),
            method_name=method_name,
            kwargs=kwargs,
            timeout=timeout,
        )
