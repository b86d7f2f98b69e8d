"""A worker-free task's end (triggers/worker_free_end.py): in the triggerer, the event after
the XComs are pushed; in a worker, the trigger's XComs are pushed, then the failure is
raised as one Airflow never retries."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.sensor_end import sensor_timed_out
from airflow_provider_sparkk8s.application.task.task_end import TaskEnd
from airflow_provider_sparkk8s.triggers.worker_free_end import end_event, end_in_worker
from airflow_provider_sparkk8s.version_compat import (
    AirflowFailException,
    AirflowSensorTimeout,
    TaskFailedEvent,
    TaskSkippedEvent,
    TaskSuccessEvent,
    TriggerEvent,
)
from testenv.fakes import FakeTaskInstance


def test_an_event_that_is_not_a_worker_end_fails_naming_it() -> None:
    with pytest.raises(AirflowFailException, match="without its end"):
        end_in_worker({"status": "success"}, lambda **_: None)


def test_the_xcoms_are_pushed_before_an_invalid_input_fails_without_retry() -> None:
    from airflow_provider_sparkk8s.application.task.task_end import refused

    pushed: dict[str, Any] = {}

    def push(*, key: str, value: Any) -> None:
        pushed[key] = value

    end = refused("conf: 'spark.x' must be a string", may_retry=True)
    payload = {**end.worker_payload(), "xcoms": {"spark_application": {"k": "v"}}}
    with pytest.raises(AirflowFailException, match="invalid input: not retried"):
        end_in_worker(payload, push)
    assert pushed == {"spark_application": {"k": "v"}}


def test_a_sensors_timeout_handed_to_a_worker_fails_as_the_sensors_timeout() -> None:
    end = sensor_timed_out("Sensor timed out (timeout=60s) in the triggerer; no driver", soft_fail=False, may_retry=True)  # fmt: skip
    with pytest.raises(AirflowSensorTimeout, match="no driver"):
        end_in_worker(end.worker_payload(), lambda **_: None)


class Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def error(self, text: str, *args: Any) -> None:
        self.lines.append(text % args)

    info = error


def push(ti: Any, key: str, value: Any) -> None:
    ti.xcom_push(key, value)


async def test_each_end_is_its_event_after_the_xcoms_are_pushed() -> None:
    ti = FakeTaskInstance()
    success = await end_event(TaskEnd(True, {"return_value": {"a": 1}}), ti, Log(), push)
    assert isinstance(success, TaskSuccessEvent) and success.xcoms is None
    assert ti.xcom == {"return_value": {"a": 1}}
    failed = TaskEnd(False, {}, failure={"kind": "infrastructure", "message": "gone"})
    assert isinstance(await end_event(failed, ti, Log(), push), TaskFailedEvent)
    log = Log()
    skipped = sensor_timed_out("Sensor timed out", soft_fail=True, may_retry=True)
    assert isinstance(await end_event(skipped, ti, log, push), TaskSkippedEvent)
    assert log.lines == ["Sensor timed out; skipped (soft_fail)"]
    handed = sensor_timed_out("Sensor timed out", soft_fail=False, may_retry=True)
    event = await end_event(handed, ti, Log(), push)
    assert type(event) is TriggerEvent and event.payload == handed.worker_payload()
