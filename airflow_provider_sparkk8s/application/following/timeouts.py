"""The two timeouts of an application, as pure functions of the last state and the clock.

`startup_timeout` bounds how long the driver may stay submitted or pending (Unschedulable,
ImagePullBackOff, ...); `run_timeout` bounds the whole application. Both count from the
submission, so a restarted worker or triggerer keeps the same deadlines.

A driver Kueue holds (`QueuedByKueue`) waits for quota, which is not a start-up problem:
while it is queued only `queue_timeout` (`spark.kubernetes.kueue.queueTimeout`, from the
submission) applies to it, and once admitted the startup timeout counts from the admission
(`startup_from`). The run timeout still counts from the submission. The trigger and
the operator's worker-side wait apply the same rules through these functions.

Airflow's `execution_timeout` bounds the whole try, from the task instance's start: in a
worker by a signal, while deferred by the deferral's timeout (`deferral_timeout`, what is
left of it). Whichever limit comes first ends the try, so a startup or run timeout at or
above execution_timeout never fires (`shadowed_timeouts`; docs/operator.md has the table).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.monitoring.reducer import QUEUED_BY_KUEUE, ApplicationState

NOT_STARTED = frozenset({"submitted", "pending"})
QUEUE_TIMEOUT = "QueueTimeout"


def is_queued(state: ApplicationState | None) -> bool:
    return state is not None and state.reason == QUEUED_BY_KUEUE


def _deadlines(
    state: ApplicationState | None,
    start_time: float,
    startup_timeout: float | None,
    run_timeout: float | None,
    queue_timeout: float | None,
    startup_from: float | None,
) -> list[tuple[float, str]]:
    """The limits that apply to `state`, as (when, reason), in the order they win when
    several are due: the run's, Kueue's queue (only while queued), the startup (only
    while the driver has not started, and not while queued; counted from `startup_from`,
    the driver's admission by Kueue, when given)."""
    queued = is_queued(state)
    applying = []
    if run_timeout is not None:
        applying.append((start_time + run_timeout, "RunTimeout"))
    if queued and queue_timeout is not None:
        applying.append((start_time + queue_timeout, QUEUE_TIMEOUT))
    if startup_timeout is not None and not queued and (state is None or state.state in NOT_STARTED):
        starts = start_time if startup_from is None else startup_from
        applying.append((starts + startup_timeout, "StartupTimeout"))
    return applying


def timed_out(
    state: ApplicationState | None,
    now: float,
    start_time: float,
    startup_timeout: float | None,
    run_timeout: float | None,
    *,
    queue_timeout: float | None = None,
    startup_from: float | None = None,
) -> ApplicationState | None:
    """The failure a timeout produces at `now`, or None while within limits."""
    limits = _deadlines(
        state, start_time, startup_timeout, run_timeout, queue_timeout, startup_from
    )
    due = [reason for when, reason in limits if now >= when]
    if not due:
        return None
    current = state or ApplicationState(state="submitted")
    if due[0] == "RunTimeout":
        message = (
            f"the application did not finish within {run_timeout:g}s "
            f"(last state: {current.describe()})"
        )
    elif due[0] == QUEUE_TIMEOUT:
        message = (
            f"the application stayed queued in Kueue for more than {queue_timeout:g}s "
            f"({current.message or 'not admitted'})"
        )
    else:
        cause = (
            current.describe() if current.reason else f"{current.state}, never scheduled or started"
        )
        message = f"the driver did not start within {startup_timeout:g}s ({cause})"
    return ApplicationState(
        state="failed",
        reason=due[0],
        message=message,
        driver_pod=current.driver_pod,
        executors=current.executors,
    )


def seconds_to_next_deadline(
    state: ApplicationState | None,
    now: float,
    start_time: float,
    startup_timeout: float | None,
    run_timeout: float | None,
    *,
    queue_timeout: float | None = None,
    startup_from: float | None = None,
) -> float | None:
    """How long a wait may block before a timeout could fire; None: no deadline applies."""
    limits = _deadlines(
        state, start_time, startup_timeout, run_timeout, queue_timeout, startup_from
    )
    if not limits:
        return None
    return max(min(when for when, _ in limits) - now, 0.0) + 0.01


def timeout_seconds(name: str, value: float | timedelta | None) -> float | None:
    """A timeout parameter as seconds; None is no limit, anything not positive is refused."""
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise SparkConfError(name, value, "a positive number of seconds, or None for no limit")
    return seconds


# ------------------------------------------------------------------ execution_timeout


def deferral_timeout(
    execution_timeout: timedelta | None, try_started: datetime | None, now: datetime
) -> timedelta | None:
    """What a deferral may last: `execution_timeout` minus what this try has spent so far
    (from the task instance's start, which Airflow keeps across deferrals); None when there
    is no execution_timeout. Zero or less means the try is over already."""
    if execution_timeout is None:
        return None
    spent = (now - try_started) if try_started is not None else timedelta(0)
    return execution_timeout - max(spent, timedelta(0))


def shadowed_timeouts(
    startup_timeout: float | None,
    run_timeout: float | None,
    execution_timeout: timedelta | None,
) -> list[str]:
    """The operator's timeouts that execution_timeout ends first, so never fire (a warning
    per name): Airflow's limit counts from the try's start, before the upload and the
    submission, so a run or startup timeout at or above it cannot be reached."""
    if execution_timeout is None:
        return []
    limit = execution_timeout.total_seconds()
    given = (("startup_timeout", startup_timeout), ("run_timeout", run_timeout))
    return [name for name, seconds in given if seconds is not None and seconds >= limit]


def limit_text(timeout: timedelta | None) -> str:
    """A timedelta limit as a message shows it: `100s`, or `None`."""
    return "None" if timeout is None else f"{timeout.total_seconds():g}s"


def ran_for(started_at: str | None, now: datetime) -> str:
    """How long a driver ran, for a timeout's message: whole seconds since `started_at`
    (RFC 3339), or "an unknown time"."""
    if not started_at:
        return "an unknown time"
    try:
        began = datetime.fromisoformat(started_at)
    except ValueError:
        return "an unknown time"
    if began.tzinfo is None:
        began = began.replace(tzinfo=UTC)
    return f"{max((now - began).total_seconds(), 0.0):.0f}s"
