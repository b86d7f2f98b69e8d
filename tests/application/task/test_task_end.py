"""How a worker-free task ends (plain data): the operator's XComs, TaskSuccessEvent or
TaskFailedEvent, and a worker only for a failure Airflow 3.3 would retry and must not."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.outcome import Report
from airflow_provider_sparkk8s.application.task.task_end import (
    APPLICATION_XCOM_KEY,
    RETURN_VALUE_KEY,
    WORKER_END_KEY,
    ended,
    failure_of,
    is_worker_end,
    refused,
    retried,
)
from airflow_provider_sparkk8s.errors import (
    ApplicationError,
    ApplicationTimedOut,
    DriverOutOfMemory,
)

APPLICATION = {"application_id": "spark-1", "status": "failed", "reason": "application_error"}


def failed(kind: str) -> Report:
    xcom = {"submission_id": "ns:d", "cause": "Error", "exit_code": 1, "reason": kind}
    return Report(False, xcom, "Spark application spark-1 failed: Error", kind, "boom")


def test_a_success_carries_the_operators_xcoms() -> None:
    xcom = {"application_id": "spark-1", "status": "success"}
    end = ended(
        Report(True, xcom, None),
        {**xcom, "driver_pod": "d"},
        memory_raised=False,
        memory_factor=None,
        retries_left=True,
        extra_xcoms={"run_summary": {"jobs": 1}},
    )
    assert end.succeeded and not end.in_worker
    assert end.xcoms == {
        RETURN_VALUE_KEY: xcom,
        APPLICATION_XCOM_KEY: {**xcom, "driver_pod": "d"},
        "run_summary": {"jobs": 1},
    }


@pytest.mark.parametrize(
    ("kind", "memory_raised", "factor", "again"),
    [
        ("application_error", False, None, False),
        ("configuration_error", False, None, False),
        ("invalid_input", False, None, False),
        ("infrastructure", False, None, True),
        ("timeout", False, None, True),
        ("failed", False, None, True),
        ("out_of_memory", False, None, True),
        ("out_of_memory", False, 2.0, True),
        ("out_of_memory", True, 2.0, False),
    ],
)
def test_retried_mirrors_the_retry_policy(
    kind: str, memory_raised: bool, factor: float | None, again: bool
) -> None:
    assert retried(kind, memory_raised=memory_raised, memory_factor=factor) is again


@pytest.mark.parametrize(
    ("kind", "retries_left", "in_worker"),
    [
        ("application_error", True, True),  # Airflow would retry it: a worker fails it
        ("application_error", False, False),  # the last try: TaskFailedEvent is final
        ("infrastructure", True, False),  # Airflow retries it from the triggerer
        ("timeout", True, False),
    ],
)
def test_who_fails_the_task(kind: str, retries_left: bool, in_worker: bool) -> None:
    end = ended(
        failed(kind),
        APPLICATION,
        memory_raised=False,
        memory_factor=None,
        retries_left=retries_left,
    )
    assert not end.succeeded and end.in_worker is in_worker
    assert end.xcoms == {APPLICATION_XCOM_KEY: APPLICATION}  # no return value on failure
    assert end.failure["kind"] == kind


def test_the_workers_payload_rebuilds_the_typed_failure() -> None:
    end = ended(
        failed("application_error"),
        APPLICATION,
        memory_raised=False,
        memory_factor=None,
        retries_left=True,
    )
    payload = end.worker_payload()
    assert is_worker_end(payload) and payload[WORKER_END_KEY] is True
    assert not is_worker_end({"status": "failed"}) and not is_worker_end(None)
    error = failure_of(payload["failure"])
    assert isinstance(error, ApplicationError)
    assert str(error).startswith("[application_error] Spark application spark-1 failed")
    assert (error.pod, error.reason, error.exit_code, error.exception_line) == (
        "ns:d",
        "Error",
        1,
        "boom",
    )


@pytest.mark.parametrize(
    ("kind", "cls"), [("out_of_memory", DriverOutOfMemory), ("timeout", ApplicationTimedOut)]
)
def test_each_kind_rebuilds_its_class(kind: str, cls: type[Exception]) -> None:
    failure: dict[str, Any] = {"kind": kind, "message": "m", "memory_raised": True}
    error = failure_of(failure)
    assert isinstance(error, cls) and error.memory_raised is True


def test_invalid_input_found_in_the_triggerer_is_never_retried() -> None:
    assert refused("conf['x'] is invalid", retries_left=True).in_worker
    last = refused("conf['x'] is invalid", retries_left=False)
    assert not last.in_worker and not last.succeeded and last.xcoms == {}
    assert last.failure == {"kind": "invalid_input", "message": "conf['x'] is invalid"}
