"""Whether a trigger's `on_kill` is a user's kill: the fence in front of the driver's delete.

Airflow 3.3's triggerer cancels every trigger it runs that the database no longer assigns
to it, with the same message as a user's kill (apache/airflow#73454), so `on_kill` also
runs on a triggerer that was paused past `triggerer_health_check_threshold` (a long GC, a
starved node, a partition to the database) after another triggerer took its triggers over.
The cancel itself proves nothing; the task instance's state, read from Airflow when the kill
runs, does:

- `deferred`: the task still waits on its trigger, which now runs elsewhere (or a newer try
  deferred again): no one asked for a kill.
- `up_for_retry`: Airflow failed the try itself (never a user's mark): the next try adopts
  the driver, running or ended, so it stays.
- finished (a user's mark failed or success, or the task ended), cleared (no state), or gone
  (its DAG run deleted): the user's wish; the driver goes.
- scheduled, queued, running, restarting, up_for_reschedule: the task went on without this
  trigger. A live driver goes (a clear's new try that adopted it is spared by `ownership`;
  a trigger fires early only for a timeout, whose resume deletes the driver anyway); an
  ended one stays, its outcome on the way to the task through another triggerer's event.
- unreadable (no supervisor, an API error): nothing is known, so nothing is deleted. A
  leftover live driver is found by the leftover clean-up; a deleted healthy one is lost work.

The state is read when the kill runs, after the cancel, from the database through the
triggerer's supervisor: a triggerer that was paused reads what is true now, not what it held
before the pause.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.application.task.leftovers import FINISHED_STATES, state_key
from airflow_provider_sparkk8s.application.task.ownership import Spare, kill_decision
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.monitoring.reducer import is_live
from airflow_provider_sparkk8s.records import record

STILL_DEFERRED = "deferred"
RETRIED_BY_AIRFLOW = "up_for_retry"
GONE = "gone"  # not in Airflow's answer: its DAG run was deleted


@record
class TaskStateRead:
    """What Airflow said of the task instance: its state (None: cleared; GONE: no such
    task instance), or why it could not be read (`error` set)."""

    state: str | None
    error: str | None = None

    @classmethod
    def unreadable(cls, why: str) -> TaskStateRead:
        return cls(None, why)

    def describe(self) -> str:
        if self.error is not None:
            return f"unreadable ({self.error})"
        return "cleared (no state)" if self.state is None else self.state


def read_from_answer(
    answer: Mapping[str, Mapping[str, Any]], ref: TaskInstanceRef
) -> TaskStateRead:
    """The task instance's state from a `get_task_states` answer ({run_id: {key: state}})."""
    states = answer.get(ref.run_id) or {}
    key = state_key(ref)
    if key not in states:
        return TaskStateRead(GONE)
    state = states[key]
    return TaskStateRead(None if state is None else str(getattr(state, "value", state)))


def spare_reason(read: TaskStateRead, driver_live: bool) -> str | None:
    """None when the kill may delete the driver (still guarded by `ownership`); else why
    not, completing "Not deleting driver pod <name>: ..."."""
    if read.error is not None:
        return f"the task instance's state could not be read ({read.error}), so no kill is proven"
    state = read.state
    if state == STILL_DEFERRED:
        return (
            "the task instance is still deferred: its trigger moved to another triggerer "
            "(or a newer try deferred)"
        )
    if state == RETRIED_BY_AIRFLOW:
        return "Airflow failed the try itself (up_for_retry): the next try adopts the driver"
    if state is None or state == GONE or state in FINISHED_STATES:
        return None
    if driver_live:
        return None
    return f"the task instance is {state} and the driver has ended or is gone: nothing to stop"


def kill_verdict(
    read: TaskStateRead, pod: Mapping[str, Any] | None, try_number: int | None
) -> str | None:
    """The whole decision on the pod as just read: None to delete it (with `ownership`'s
    preconditions), else why not. A newer try's ownership, or a pod already going, is the
    more specific reason and is named first; then the task instance's state."""
    if pod is not None:
        owned = kill_decision(pod, try_number)
        if isinstance(owned, Spare):
            return owned.reason
    return spare_reason(read, pod is not None and is_live(pod))
