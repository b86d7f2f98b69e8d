"""SparkK8sSensorTrigger with its blocking phases and its follower faked: the kwargs, the
rendering, the lookup until the driver exists, and which event ends the task."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.services.following.sensed_application import Named, Target
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from airflow_provider_sparkk8s.triggers.spark_k8s_sensor import SparkK8sSensorTrigger
from airflow_provider_sparkk8s.version_compat import (
    TaskFailedEvent,
    TaskSkippedEvent,
    TaskSuccessEvent,
    TriggerEvent,
)
from testenv.fakes import FakeTaskInstance
from testenv.harness.pod_builders import APP, pod, running

FOUND = Target(APP, "d", (pod("d", phase="Running", containers=[running()]),))
MISSING = Target(None, None, ())
SUCCESS = {"status": "success", "application_id": APP, "state": "succeeded"}
FAILED = {"status": "failed", "application_id": APP, "reason": "Error", "exit_code": 1}


class FakeSensorRun:
    """Answers the lookups in turn (the last one again), and records the timeouts."""

    def __init__(self, *targets: Target, error: Exception | None = None) -> None:
        self.targets, self.error = list(targets), error
        self.named = Named(application_id=APP)
        self.looks = 0
        self.timeouts: list[bool] = []

    def look_up(self) -> tuple[Target, str]:
        self.looks += 1
        if self.error is not None:
            raise self.error
        target = self.targets.pop(0) if len(self.targets) > 1 else self.targets[0]
        return target, "ns"

    def timed_out(self, *, delete: bool) -> str:
        self.timeouts.append(delete)
        return "driver pod ns:d of application x ran for 5s and was deleted"


@pytest.fixture
def final(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The follower ends with `final["event"]` (None: never); the followers made are kept."""
    state: dict[str, Any] = {"event": SUCCESS, "made": []}

    async def run(self: SparkK8sApplicationTrigger) -> AsyncIterator[TriggerEvent]:
        state["made"].append(self)
        if state["event"] is None:
            await asyncio.sleep(3600)
        yield TriggerEvent(state["event"])

    monkeypatch.setattr(SparkK8sApplicationTrigger, "run", run)
    return state


def trigger(fake: FakeSensorRun, ti: Any = None, **kwargs: Any) -> SparkK8sSensorTrigger:
    made = SparkK8sSensorTrigger(application_id=APP, poke_interval=0.01, **kwargs)
    patched: Any = made
    patched._sensor_run = lambda runs: fake
    patched.task_instance = ti or FakeTaskInstance(task_id="wait")
    patched.push_xcom = lambda ti, key, value: ti.xcom_push(key, value)
    return made


async def events(made: SparkK8sSensorTrigger) -> list[Any]:
    async def drain() -> list[Any]:
        return [event async for event in made.run()]

    return await asyncio.wait_for(drain(), 10)


def test_kwargs_round_trip() -> None:
    path, kwargs = SparkK8sSensorTrigger(label_selector="job={{ ds }}", timeout=60).serialize()
    assert path == "airflow_provider_sparkk8s.triggers.spark_k8s_sensor.SparkK8sSensorTrigger"
    assert SparkK8sSensorTrigger(**kwargs).serialize() == (path, kwargs)


def test_the_trigger_imports_its_machinery_off_the_event_loop() -> None:
    import ast
    import inspect

    from airflow_provider_sparkk8s.triggers import spark_k8s_sensor

    tree = ast.parse(inspect.getsource(spark_k8s_sensor))
    top = [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)]
    heavy = (".hooks", ".services", ".kube", ".triggers.sensor_run")
    assert [name for name in top if any(part in name for part in heavy)] == []


def test_rendering_uses_the_tasks_context() -> None:
    made = SparkK8sSensorTrigger(label_selector="day={{ ds }}", namespace="{{ params.ns }}")
    made.render_template_fields({"ds": "2026-12-07", "params": {"ns": "team-a"}})
    assert (made.label_selector, made.namespace) == ("day=2026-12-07", "team-a")


async def test_it_looks_until_the_driver_exists_then_ends_with_the_followers_event(
    final: dict[str, Any],
) -> None:
    fake, ti = FakeSensorRun(MISSING, MISSING, FOUND), FakeTaskInstance(task_id="wait")
    (event,) = await events(trigger(fake, ti, stream_logs=True))
    assert isinstance(event, TaskSuccessEvent) and event.xcoms is None
    assert ti.xcom == {"return_value": SUCCESS}  # the deferred sensor's XCom
    assert fake.looks == 3
    (follower,) = final["made"]
    assert (follower.application_id, follower.namespace, follower.driver_pod_name) == (APP, "ns", "d")  # fmt: skip
    assert follower.delete_on_kill is False and follower.stream_logs is True


async def test_a_failed_application_fails_the_task_in_the_triggerer(
    final: dict[str, Any],
) -> None:
    final["event"] = FAILED
    (event,) = await events(trigger(FakeSensorRun(FOUND)))
    assert isinstance(event, TaskFailedEvent)  # no retry policy: Airflow retries it


async def test_with_a_retry_policy_an_application_error_goes_to_a_worker(
    final: dict[str, Any],
) -> None:
    final["event"] = FAILED
    ti = FakeTaskInstance(task_id="wait")
    task = {"retries": 2, "template_ext": (), "template_fields": (), "start_trigger_args": None}
    ti.task = type("Task", (), task)()  # type: ignore[attr-defined]
    (event,) = await events(trigger(FakeSensorRun(FOUND), ti, retry_policy=True))
    assert type(event) is TriggerEvent and event.payload["failure"]["kind"] == "application_error"


async def test_a_timeout_before_the_driver_exists_fails_without_a_worker(
    final: dict[str, Any],
) -> None:
    fake = FakeSensorRun(MISSING)
    (event,) = await events(trigger(fake, timeout=0.05, delete_on_timeout=True))
    assert isinstance(event, TaskFailedEvent)  # no retries: final
    assert fake.timeouts == [True] and final["made"] == []


async def test_a_timeout_while_following_deletes_as_asked_and_skips_with_soft_fail(
    final: dict[str, Any],
) -> None:
    final["event"] = None  # the application never ends
    fake = FakeSensorRun(FOUND)
    (event,) = await events(trigger(fake, timeout=0.2, soft_fail=True))
    assert isinstance(event, TaskSkippedEvent) and fake.timeouts == [False]


async def test_the_deadline_is_the_one_airflow_keeps_for_the_task(final: dict[str, Any]) -> None:
    """A triggerer that runs the trigger again keeps the window: it is read from the
    deadline Airflow set when the task started (timeout + grace)."""
    fake = FakeSensorRun(MISSING)
    made = trigger(fake, timeout=600)
    made.timeout_after = datetime.now(UTC) - timedelta(seconds=1) + timedelta(seconds=60)  # type: ignore[attr-defined]
    (event,) = await events(made)
    assert isinstance(event, TaskFailedEvent) and fake.timeouts == [False]


async def test_a_failed_lookup_fails_the_task_for_a_retry(final: dict[str, Any]) -> None:
    fake = FakeSensorRun(error=KubeApiError(503, "ServiceUnavailable", "later"))
    (event,) = await events(trigger(fake))
    assert isinstance(event, TaskFailedEvent) and final["made"] == []


async def test_a_template_the_triggerer_cannot_render_ends_the_task_naming_its_parameter(
    final: dict[str, Any],
) -> None:
    """The DAG's filters never reach the triggerer: invalid input, not retried, no lookup."""
    ti: Any = FakeTaskInstance(task_id="wait")
    ti.max_tries = 2
    fake = FakeSensorRun(FOUND)
    made = trigger(fake, ti)
    made.namespace = "{{ ds | team_namespace }}"
    made.render_template_fields({"ds": "2026-12-07"})
    (event,) = await events(made)
    assert type(event) is TriggerEvent  # tries are left: a worker fails it, not retried
    failure = event.payload["failure"]
    assert failure["kind"] == "invalid_input"
    assert failure["message"].startswith("namespace: a template does not render")
    assert "No filter named 'team_namespace'" in failure["message"]
    assert fake.looks == 0 and final["made"] == []
