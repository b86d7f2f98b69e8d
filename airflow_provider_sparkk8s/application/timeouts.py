"""The two timeouts of an application, as pure functions of the last state and the clock.

`startup_timeout` bounds how long the driver may stay submitted or pending (Unschedulable,
ImagePullBackOff, ...); `run_timeout` bounds the whole application. Both count from the
submission, so a restarted worker or triggerer keeps the same deadlines. The trigger and
the operator's worker-side wait apply the same rules through these functions.
"""

from __future__ import annotations

from datetime import timedelta

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState

NOT_STARTED = frozenset({"submitted", "pending"})


def timed_out(
    state: ApplicationState | None,
    now: float,
    start_time: float,
    startup_timeout: float | None,
    run_timeout: float | None,
) -> ApplicationState | None:
    """The failure a timeout produces at `now`, or None while within limits."""
    elapsed = now - start_time
    current = state or ApplicationState(state="submitted")
    if run_timeout is not None and elapsed >= run_timeout:
        reason = "RunTimeout"
        message = (
            f"the application did not finish within {run_timeout:g}s "
            f"(last state: {current.describe()})"
        )
    elif (
        startup_timeout is not None and current.state in NOT_STARTED and elapsed >= startup_timeout
    ):
        reason = "StartupTimeout"
        cause = (
            current.describe() if current.reason else f"{current.state}, never scheduled or started"
        )
        message = f"the driver did not start within {startup_timeout:g}s ({cause})"
    else:
        return None
    return ApplicationState(
        state="failed",
        reason=reason,
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
) -> float | None:
    """How long a wait may block before a timeout could fire; None: no deadline applies."""
    deadlines = []
    if run_timeout is not None:
        deadlines.append(start_time + run_timeout)
    if startup_timeout is not None and (state is None or state.state in NOT_STARTED):
        deadlines.append(start_time + startup_timeout)
    if not deadlines:
        return None
    return max(min(deadlines) - now, 0.0) + 0.01


def timeout_seconds(name: str, value: float | timedelta | None) -> float | None:
    """A timeout parameter as seconds; None is no limit, anything not positive is refused."""
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise SparkConfError(name, value, "a positive number of seconds, or None for no limit")
    return seconds
