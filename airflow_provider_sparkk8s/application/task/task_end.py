"""How a worker-free task ends, decided on plain data: the XComs, and who fails it.

A worker-free trigger ends its task itself (`TaskSuccessEvent` / `TaskFailedEvent`) with
the XComs the operator pushes in a worker. On Airflow 3.3 a `TaskFailedEvent` goes up for
retry whenever the task has tries left (`TaskInstance.is_eligible_to_retry`): the task's
retry policy is never asked. So a failure the policy would not retry (an application or
configuration error, an out-of-memory driver that already ran with raised memory, invalid
input) is handed to a worker while tries are left: the trigger's plain event resumes the
operator's `execute_worker_free_end`, which raises the typed failure for the retry policy to
fail at once. Retried failures (infrastructure, timeouts, a first out-of-memory driver with
a memory factor), and every failure of a task without retries, end in the triggerer.

A failure that must not retry goes to a worker on every try of a task with retries, the
last one too: the trigger knows the try number and the task's `retries`, not the
`max_tries` Airflow holds (a clear raises it), so it cannot tell the last try for sure, and
a wrong guess would retry an application error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from airflow_provider_sparkk8s.application.task.outcome import Report, failure_exception
from airflow_provider_sparkk8s.errors import NOT_RETRIED, ApplicationFailed
from airflow_provider_sparkk8s.records import record

APPLICATION_XCOM_KEY = "spark_application"
RETURN_VALUE_KEY = "return_value"
# The operator's method a handed-over failure resumes, and the event's marker.
WORKER_END_METHOD = "execute_worker_free_end"
WORKER_END_KEY = "worker_free_end"
INVALID_INPUT = "invalid_input"  # a SparkConfError: bad input, never retried
SENSOR_TIMEOUT = "sensor_timeout"  # Airflow never retries AirflowSensorTimeout
NEVER_RETRIED = frozenset({cls.kind for cls in NOT_RETRIED} | {INVALID_INPUT, SENSOR_TIMEOUT})


def retried(kind: str, *, memory_raised: bool, memory_factor: float | None) -> bool:
    """Whether the provider's retry policy (operators/retry_policy.py) retries `kind`."""
    if kind in NEVER_RETRIED:
        return False
    return not (kind == "out_of_memory" and memory_factor is not None and memory_raised)


@record
class Tries:
    """What a trigger knows of its task's tries. `may_retry`: Airflow can retry a
    `TaskFailedEvent` at all (the task has retries); `another`: Airflow will, as far as the
    trigger can tell (an out-of-memory driver stays for that try)."""

    another: bool
    may_retry: bool


def tries_of(try_number: int, retries: int | None, max_tries: int | None) -> Tries:
    """From the try number, the task's `retries` (None: unknown) and the task instance's
    `max_tries` (0 in the triggerer, which does not receive it)."""
    known = int(retries if retries is not None else (max_tries or 0))
    limit = max(known, int(max_tries or 0))
    return Tries(another=known > 0 and try_number <= limit, may_retry=known > 0)


@record
class TaskEnd:
    """The task's end: its state, the XComs Airflow stores, and, for a failure, whether
    a worker fails it (`in_worker`) and what it raises (`failure`); `skipped`: a sensor's
    timeout with `soft_fail`."""

    succeeded: bool
    xcoms: dict[str, Any]
    in_worker: bool = False
    failure: dict[str, Any] = field(default_factory=dict)
    skipped: bool = False

    def worker_payload(self) -> dict[str, Any]:
        """The plain event's payload that resumes `WORKER_END_METHOD`."""
        return {WORKER_END_KEY: True, "xcoms": self.xcoms, "failure": self.failure}


def ended(
    outcome: Report,
    application_xcom: Mapping[str, Any],
    *,
    memory_raised: bool,
    memory_factor: float | None,
    may_retry: bool,
    extra_xcoms: Mapping[str, Any] | None = None,
) -> TaskEnd:
    """The end of a followed application: the operator's XComs (its return value and
    `spark_application`), or its typed failure, failed where its retry rule holds."""
    xcoms = {APPLICATION_XCOM_KEY: dict(application_xcom), **(extra_xcoms or {})}
    if outcome.succeeded:
        return TaskEnd(True, {RETURN_VALUE_KEY: outcome.xcom, **xcoms})
    failure = {
        "kind": outcome.kind,
        "message": outcome.failure or "failed",
        "pod": outcome.xcom.get("submission_id"),
        "reason": outcome.xcom.get("cause"),
        "exit_code": outcome.xcom.get("exit_code"),
        "exception_line": outcome.exception_line,
        "memory_raised": memory_raised,
    }
    again = retried(outcome.kind, memory_raised=memory_raised, memory_factor=memory_factor)
    return TaskEnd(False, xcoms, in_worker=may_retry and not again, failure=failure)


def refused(message: str, *, may_retry: bool) -> TaskEnd:
    """Invalid input found in the triggerer (a rendered value refused): never retried."""
    failure = {"kind": INVALID_INPUT, "message": message}
    return TaskEnd(False, {}, in_worker=may_retry, failure=failure)


def is_worker_end(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get(WORKER_END_KEY) is True


def failure_of(failure: Mapping[str, Any]) -> ApplicationFailed:
    """The typed failure a handed-over end raises in the worker (not for invalid input)."""
    fields = {name: failure.get(name) for name in ("pod", "reason", "exit_code", "exception_line")}
    return failure_exception(
        str(failure.get("kind")),
        str(failure.get("message")),
        memory_raised=bool(failure.get("memory_raised")),
        **fields,
    )
