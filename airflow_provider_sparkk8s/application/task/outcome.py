"""What a finished application reports: the XCom value, the failure message, the cleanup.

Plain data in (the tracked application and the final event, see `events`), plain data out;
the operator's `execute_complete` does the I/O around it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.errors import FAILURE_CLASSES, ApplicationFailed
from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind
from airflow_provider_sparkk8s.monitoring.image_pull import IMAGE_NOT_FOUND
from airflow_provider_sparkk8s.records import record

ON_FINISH_ACTIONS = ("delete_pod", "delete_succeeded_pod", "keep_pod")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def duration_seconds(submitted_at: str, finished_at: Any, now: datetime) -> float | None:
    """From the driver pod's creation to the driver's end (or `now` if it has no end)."""
    start = _parse_time(submitted_at)
    if start is None:
        return None
    end = _parse_time(finished_at) or now
    return round(max((end - start).total_seconds(), 0.0), 3)


@record
class Report:
    succeeded: bool
    xcom: dict[str, Any]
    failure: str | None  # the exception message when not succeeded
    kind: str = "succeeded"  # the failure's kind (errors.FAILURE_CLASSES) when not succeeded
    exception_line: str | None = None

    def exception(self, *, memory_raised: bool = False) -> ApplicationFailed:
        """The typed outcome to raise for a failed report."""
        return failure_exception(
            self.kind,
            self.failure or "failed",
            pod=self.xcom.get("submission_id"),
            reason=self.xcom.get("cause"),
            exit_code=self.xcom.get("exit_code"),
            exception_line=self.exception_line,
            memory_raised=memory_raised,
        )


def failure_exception(kind: str, message: str, **fields: Any) -> ApplicationFailed:
    """The exception class of `kind`, its message prefixed with the kind (the task log's
    line says which kind it was without the traceback's class name)."""
    cls = FAILURE_CLASSES.get(kind, ApplicationFailed)
    return cls(f"[{cls.kind}] {message}", **fields)


def exception_line_of(event: Mapping[str, Any]) -> str | None:
    """The last exception line: the driver log's (the operator puts it in
    `driver_exception`), else Spark's exit exception annotation."""
    for key in ("driver_exception", "exit_exception"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def report(app: TrackedApplication, event: Mapping[str, Any], now: datetime) -> Report:
    succeeded = event.get("status") == "success"
    line = exception_line_of(event)
    kind = "succeeded" if succeeded else failure_kind(event, line)
    xcom = {
        "application_id": app.application_id,
        "namespace": app.namespace,
        "driver_pod": app.driver_pod,
        "submission_id": app.submission_id,
        "state": event.get("state"),
        "status": event.get("status"),
        # The outcome's kind: succeeded, application_error, configuration_error,
        # out_of_memory, infrastructure, timeout; `cause` is the pod's (or the timeout's,
        # or ImageNotFound's) own reason.
        "reason": kind,
        "cause": event.get("reason"),
        "exit_code": event.get("exit_code"),
        "exception": line,
        "exit_exception": event.get("exit_exception"),  # Spark's own annotation, first line
        "duration_seconds": duration_seconds(app.submitted_at, event.get("finished_at"), now),
        "executors": event.get("executors") or {"counts": {}, "failures": []},
        # What the pods requested over the time they ran (application.following.cost); None when the
        # event carries none (an event of an older trigger).
        "cost": event.get("cost"),
        "adopted": app.adopted,
        # From the driver's creation to Kueue's admission (seconds); None without Kueue.
        "queued_seconds": event.get("queued_seconds"),
    }
    failure = None if succeeded else failure_message(app, event)
    return Report(succeeded, xcom, failure, kind, line)


def needs_driver_exception(event: Mapping[str, Any]) -> bool:
    """A driver that exited non-zero and left no message: its log's exception says why."""
    return (
        event.get("status") == "failed"
        and event.get("exit_code") not in (None, 0)
        and not (event.get("termination_message") or event.get("message"))
    )


def failure_message(app: TrackedApplication, event: Mapping[str, Any]) -> str:
    """Names the application, then the driver's reason, exit code and message."""
    parts = [str(event.get("reason") or event.get("state") or "failed")]
    if event.get("exit_code") is not None:
        parts.append(f"exit code {event['exit_code']}")
    detail = (
        event.get("termination_message")
        or event.get("message")
        or event.get("driver_exception")
        or event.get("exit_exception")
    )
    what = ", ".join(parts) + (f": {detail}" if detail else "")
    failures = (event.get("executors") or {}).get("failures") or []
    executors = ""
    if failures:
        first = failures[0]
        executors = (
            f"; {len(failures)} executor(s) failed, first {first.get('pod_name')}: "
            f"{first.get('reason')} (exit code {first.get('exit_code')})"
        )
    return (
        f"Spark application {app.application_id} (driver pod {app.submission_id}) "
        f"failed: {what}{executors}"
    )


def _abandoned(event: Mapping[str, Any]) -> bool:
    """A driver that has not ended, which nobody follows any more: timed out, or waiting on
    an image its registry says does not exist (the kubelet would pull it forever)."""
    return event.get("status") == "timeout" or event.get("reason") == IMAGE_NOT_FOUND


def should_delete_driver(on_finish_action: str, event: Mapping[str, Any]) -> bool:
    """Whether the finished (or abandoned) driver pod goes.

    An abandoned driver (timed out, or its image missing) is always deleted: it is still
    pending or running, nobody follows it any more, and a retry must not adopt it.
    """
    if _abandoned(event):
        return True
    if on_finish_action == "delete_pod":
        return True
    if on_finish_action == "delete_succeeded_pod":
        return event.get("status") == "success"
    return False


def deletion_reason(on_finish_action: str, event: Mapping[str, Any]) -> str:
    """Why `should_delete_driver` said yes, for the task log: the missing image, a timeout,
    or the action."""
    if event.get("reason") == IMAGE_NOT_FOUND:
        return "its image does not exist"
    return "timed out" if event.get("status") == "timeout" else on_finish_action
