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
    tries_of,
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
        may_retry=True,
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
    ("kind", "may_retry", "in_worker"),
    [
        ("application_error", True, True),  # Airflow would retry it: a worker fails it
        ("application_error", False, False),  # no retries: TaskFailedEvent is final
        ("infrastructure", True, False),  # Airflow retries it from the triggerer
        ("timeout", True, False),
    ],
)
def test_who_fails_the_task(kind: str, may_retry: bool, in_worker: bool) -> None:
    end = ended(
        failed(kind),
        APPLICATION,
        memory_raised=False,
        memory_factor=None,
        may_retry=may_retry,
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
        may_retry=True,
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
    assert refused("conf['x'] is invalid", may_retry=True).in_worker
    last = refused("conf['x'] is invalid", may_retry=False)
    assert not last.in_worker and not last.succeeded and last.xcoms == {}
    assert last.failure == {"kind": "invalid_input", "message": "conf['x'] is invalid"}


@pytest.mark.parametrize(
    ("try_number", "retries", "max_tries", "another", "may_retry"),
    [
        (1, 0, 0, False, False),  # no retries: every TaskFailedEvent is final
        (1, 2, 0, True, True),  # the triggerer's task instance has max_tries 0
        (3, 2, 0, False, True),  # past the retries: no other try as far as it can tell
        (4, 2, 5, True, True),  # a clear raised max_tries (a task instance that has it)
        (1, None, 1, True, True),  # retries unknown: max_tries says
        (1, None, None, False, False),
    ],
)
def test_what_a_trigger_knows_of_the_tries(
    try_number: int, retries: int | None, max_tries: int | None, another: bool, may_retry: bool
) -> None:
    tries = tries_of(try_number, retries, max_tries)
    assert (tries.another, tries.may_retry) == (another, may_retry)
