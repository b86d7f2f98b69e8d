"""How the application sensor ends, decided on plain data: its XCom, its typed failure, and,
worker-free, which event ends the task and when its own timeout falls.

The sensor's XCom is the follower's final event; a failed application raises the
operator's typed failure (`failure_of`) with the message built here, whether the sensor
poked, deferred or ran worker-free. Worker-free, the retry rules are `task_end`'s: Airflow
3.3 retries a `TaskFailedEvent` while tries are left, so what must not retry goes to a
worker. Without a retry policy Airflow retries every failed application, as for the
deferred sensor; with one, the provider's policy decides (`retried`), as for the operator.
A sensor's timeout is never retried (AirflowSensorTimeout), and skips with `soft_fail`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_sparkk8s.application.task.task_end import (
    RETURN_VALUE_KEY,
    SENSOR_TIMEOUT,
    TaskEnd,
    retried,
)
from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind

# Airflow's own trigger timeout comes this long after the trigger's: a backstop, when no
# triggerer ran the trigger at its deadline (the task is then failed in a worker).
DEADLINE_GRACE = 60.0


def failed_message(event: Mapping[str, Any]) -> str:
    """A failed application's final event in one line: its status, reason, exit code and
    the driver's last words."""
    detail = (
        event.get("termination_message")
        or event.get("message")
        or event.get("exit_exception")
        or ""
    )
    code = f", exit code {event['exit_code']}" if event.get("exit_code") is not None else ""
    return (
        f"Spark application {event.get('application_id')} {event.get('status')}: "
        f"{event.get('reason')}{code}{': ' + detail if detail else ''}"
    )


def application_failure(event: Mapping[str, Any], message: str | None = None) -> dict[str, Any]:
    """The failure of a failed application, as `task_end.failure_of` raises it."""
    return {
        "kind": failure_kind(event),
        "message": message or failed_message(event),
        "pod": event.get("driver_pod"),
        "reason": event.get("reason"),
        "exit_code": event.get("exit_code"),
        "exception_line": event.get("exit_exception"),
    }


def sensed(
    event: Mapping[str, Any], *, may_retry: bool, policy: bool, memory_factor: float | None
) -> TaskEnd:
    """The end of a followed application: the event as the XCom, or its failure, failed in a
    worker when Airflow would retry it and the task's retry policy would not."""
    if event.get("status") == "success":
        return TaskEnd(True, {RETURN_VALUE_KEY: dict(event)})
    failure = application_failure(event)
    again = not policy or retried(failure["kind"], memory_raised=False, memory_factor=memory_factor)
    return TaskEnd(False, {}, in_worker=may_retry and not again, failure=failure)


def sensor_timed_out(message: str, *, soft_fail: bool, may_retry: bool) -> TaskEnd:
    """The sensor's timeout: skipped with `soft_fail`, else failed, never retried."""
    failure = {"kind": SENSOR_TIMEOUT, "message": message}
    if soft_fail:
        return TaskEnd(False, {}, failure=failure, skipped=True)
    return TaskEnd(False, {}, in_worker=may_retry, failure=failure)


def trigger_timeout(timeout: float) -> timedelta:
    """The start trigger's timeout the sensor gives Airflow: its own, and the grace."""
    return timedelta(seconds=timeout + DEADLINE_GRACE)


def sensor_deadline(
    timeout_after: datetime | None,
    timeout: float,
    execution_timeout: float | None,
    now: datetime,
) -> datetime | None:
    """When the worker-free trigger ends the task as timed out, counted from the task's
    start whatever triggerer runs it (a restart keeps the window).

    `timeout_after` is the deadline Airflow keeps for the task: its start plus the nearer of
    `trigger_timeout` and `execution_timeout`, so the start is read back from it. None:
    `execution_timeout` comes first, and Airflow's own timeout fails the task in a worker.
    Without `timeout_after` (not run by a triggerer) the window starts now."""
    if timeout_after is None:
        return now + timedelta(seconds=timeout)
    allowed = trigger_timeout(timeout)
    if execution_timeout is not None:
        allowed = min(allowed, timedelta(seconds=execution_timeout))
    deadline = timeout_after - allowed + timedelta(seconds=timeout)
    return deadline if deadline < timeout_after else None
