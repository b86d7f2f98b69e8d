"""Test harness for tests/e2e/test_clear_rerun.py: pins the order of a clear's two halves.

`HoldKillOperator` (used by the clear DAGs in e2e_dags/e2e_clear.py) writes a marker file
when a try defers, and defers to `HeldKillTrigger`, whose `on_kill` waits for the next
try's marker before it runs the provider's `on_kill`. So the old trigger's kill comes only
after the new try has adopted or submitted, and deferred: the order the user saw (issue 29,
the kill one second after the adoption), made certain. `KillFirstOperator`'s trigger kills
at once; the test holds the new try back instead (its pool has no slot until the kill's
marker is written). Either kill writes `<marker>.killed` with the lines it logged, so the
test reads what the kill did even when the trigger's log closed first. Only ids, a path and
a flag cross into the triggerer; the triggerer imports this module through PYTHONPATH (the
repository).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

# The kill-first test holds the new try back by this pool (no slot until the old kill ran).
KILL_FIRST_POOL = "e2e_clear_kill_first"
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


def write_whole(path: Path, lines: list[str]) -> None:
    """Write `lines` so that a reader sees the file only once it is complete."""
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text("".join(f"{line}\n" for line in lines))
    os.replace(partial, path)


class RecordingLog:
    """The trigger's logger, keeping each line it logs (formatted as logging would)."""

    def __init__(self, inner: Any, lines: list[str]) -> None:
        self._inner = inner
        self._lines = lines

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if name not in ("debug", "info", "warning", "error", "exception"):
            return method

        def record(msg: str, *args: Any, **kwargs: Any) -> Any:
            self._lines.append(msg % args if args else msg)
            return method(msg, *args, **kwargs)

        return record


class HeldKillTrigger(SparkK8sApplicationTrigger):
    def __init__(self, *, release_marker: str, hold: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.release_marker = release_marker
        self.hold = hold

    def serialize(self) -> tuple[str, dict[str, Any]]:
        path, kwargs = super().serialize()
        return path, {**kwargs, "release_marker": self.release_marker, "hold": self.hold}

    async def on_kill(self) -> None:
        # Its own task behind a shield: the triggerer repeats the cancel while this waits.
        held = asyncio.ensure_future(self._kill_when_released())
        _held.add(held)
        held.add_done_callback(_held.discard)
        await asyncio.shield(held)

    async def _kill_when_released(self) -> None:
        if self.hold:
            await asyncio.to_thread(wait_for_file, Path(self.release_marker), HOLD_SECONDS)
            self.log.info("Kill released by %s", self.release_marker)
        lines: list[str] = []
        inner = self.log
        self._log = RecordingLog(inner, lines)  # LoggingMixin's `log` returns `_log`
        try:
            await SparkK8sApplicationTrigger.on_kill(self)
        finally:
            self._log = inner
            # The trigger's log may be closed by now (it ended when cancelled): tell the
            # test here, with what the kill logged.
            await asyncio.to_thread(write_whole, Path(f"{self.release_marker}.killed"), lines)


class HoldKillOperator(SparkK8sSubmitOperator):
    hold_kill = True  # the trigger's kill waits for the next try's deferral

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
            trigger=HeldKillTrigger(
                release_marker=str(release), hold=self.hold_kill, **trigger_kwargs
            ),
            method_name=method_name,
            kwargs=kwargs,
            timeout=timeout,
        )


class KillFirstOperator(HoldKillOperator):
    """Its trigger's kill runs as soon as Airflow cancels the trigger (the test holds the
    next try back by its pool)."""

    hold_kill = False
