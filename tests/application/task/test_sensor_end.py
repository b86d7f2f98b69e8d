"""How the application sensor ends (plain data): its XCom, its typed failure, and,
worker-free, which end goes to a worker and when the sensor's own timeout falls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_sparkk8s.application.task.sensor_end import (
    DEADLINE_GRACE,
    application_failure,
    failed_message,
    sensed,
    sensor_deadline,
    sensor_timed_out,
    trigger_timeout,
)
from airflow_provider_sparkk8s.application.task.task_end import (
    RETURN_VALUE_KEY,
    SENSOR_TIMEOUT,
    failure_of,
)
from airflow_provider_sparkk8s.errors import ApplicationError, InfrastructureFailure

FAILED = {
    "status": "failed",
    "application_id": "spark-1",
    "driver_pod": "ns:d",
    "reason": "Error",
    "exit_code": 1,
    "exit_exception": "ValueError: boom",
}
EVICTED = {"status": "failed", "application_id": "spark-1", "reason": "Evicted"}
NOW = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)


def test_a_failed_application_reads_as_one_line_and_raises_its_kind() -> None:
    assert failed_message(FAILED) == "Spark application spark-1 failed: Error, exit code 1: ValueError: boom"  # fmt: skip
    failure = application_failure(FAILED)
    assert failure["kind"] == "application_error"
    error = failure_of(failure)
    assert isinstance(error, ApplicationError)
    assert (error.pod, error.exit_code, error.exception_line) == ("ns:d", 1, "ValueError: boom")
    assert isinstance(failure_of(application_failure(EVICTED)), InfrastructureFailure)


def test_a_success_is_the_followers_event_as_the_xcom() -> None:
    event = {"status": "success", "application_id": "spark-1", "state": "succeeded"}
    end = sensed(event, may_retry=True, policy=True, memory_factor=None)
    assert end.succeeded and end.xcoms == {RETURN_VALUE_KEY: event}


@pytest.mark.parametrize(
    ("event", "policy", "may_retry", "in_worker"),
    [
        (FAILED, False, True, False),  # no policy: Airflow retries it, as when deferred
        (FAILED, True, True, True),  # the provider's policy fails it: a worker does
        (FAILED, True, False, False),  # no retries: the triggerer's failure is final
        (EVICTED, True, True, False),  # infrastructure: retried from the triggerer
    ],
)
def test_a_failure_goes_to_a_worker_only_where_airflow_would_retry_and_must_not(
    event: dict, policy: bool, may_retry: bool, in_worker: bool
) -> None:
    end = sensed(event, may_retry=may_retry, policy=policy, memory_factor=None)
    assert not end.succeeded and end.xcoms == {}
    assert end.in_worker is in_worker


def test_a_timeout_is_never_retried_and_skips_with_soft_fail() -> None:
    failed = sensor_timed_out("Sensor timed out", soft_fail=False, may_retry=True)
    assert failed.in_worker and failed.failure == {"kind": SENSOR_TIMEOUT, "message": "Sensor timed out"}  # fmt: skip
    assert not sensor_timed_out("m", soft_fail=False, may_retry=False).in_worker
    skipped = sensor_timed_out("m", soft_fail=True, may_retry=True)
    assert skipped.skipped and not skipped.in_worker


def test_the_deadline_counts_from_the_tasks_start_airflow_keeps() -> None:
    start = NOW - timedelta(seconds=100)
    after = start + trigger_timeout(600)  # what Airflow sets: start + timeout + grace
    assert sensor_deadline(after, 600, None, NOW) == start + timedelta(seconds=600)
    # execution_timeout after the sensor's: the sensor's comes first, from the same start.
    after = start + timedelta(seconds=650)
    assert sensor_deadline(after, 600, 650, NOW) == start + timedelta(seconds=600)


def test_execution_timeout_first_is_left_to_airflow() -> None:
    start = NOW - timedelta(seconds=100)
    assert sensor_deadline(start + timedelta(seconds=300), 600, 300, NOW) is None
    assert sensor_deadline(start + timedelta(seconds=600), 600, 600, NOW) is None


def test_without_airflows_deadline_the_window_starts_now() -> None:
    assert sensor_deadline(None, 60, None, NOW) == NOW + timedelta(seconds=60)
    assert trigger_timeout(60) == timedelta(seconds=60 + DEADLINE_GRACE)
