"""Adopt the driver a task instance already has, or submit a new one: a pure decision.

Input is every driver pod that carries the task instance's label (any submission, any
state), and what the deciding try knows of itself; output says what the shell does. The rules:
- a clear runs the task afresh: a live driver submitted before the DAG run's latest clear
  (its clear-number label below the run's) is never adopted; it is deleted, as the old try's
  kill deletes it too, and the new submission waits until it is gone;
- a live driver of the same clear (a retry after a worker crash, a second worker of one try)
  is adopted, never submitted twice; the shell marks it adopted (`application.task.ownership`) so
  an older try's late kill leaves it alone;
- when several are live (only possible if something outside us created one), the oldest
  submission is adopted and the others are listed for deletion;
- otherwise a new submission, once every driver being deleted is gone (one task instance,
  one driver at a time), numbered one past the highest seen and at least the try number, so
  the new pod's name never collides with a finished or terminating pod of an earlier try.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.task_identity import (
    clear_number_of,
    submission_number,
)
from airflow_provider_sparkk8s.monitoring.reducer import is_live, reduce_application
from airflow_provider_sparkk8s.records import record

Pod = Mapping[str, Any]


@record
class Adopt:
    pod: Pod
    state: str
    extra_live_pods: tuple[str, ...] = ()  # names to delete: one task instance, one driver


@record
class SubmitNew:
    submission: int
    live_pods_to_delete: tuple[str, ...] = ()  # set only when reattaching is switched off
    superseded_pods: tuple[str, ...] = ()  # live drivers of an earlier clear: deleted
    # Every pod to see gone before submitting: those deleted here and those being deleted.
    wait_for_gone: tuple[str, ...] = ()


def _name(pod: Pod) -> str:
    return objects.name(pod) or ""


def by_submission(pod: Pod) -> tuple[int, str]:
    """Sort key of a task instance's driver pods: oldest submission first, then by name."""
    return submission_number(pod), _name(pod)


def superseded(pod: Pod, clear_number: int | None) -> bool:
    """The pod was submitted before the DAG run's latest clear. Unknown on either side
    (an older pod without the label, an Airflow without the count): not superseded."""
    submitted_in = clear_number_of(pod)
    return clear_number is not None and submitted_in is not None and submitted_in < clear_number


def decide(
    pods: Iterable[Pod],
    *,
    reattach: bool = True,
    clear_number: int | None = None,
    try_number: int = 1,
) -> Adopt | SubmitNew:
    drivers = sorted(pods, key=by_submission)
    live = [p for p in drivers if is_live(p)]
    old = tuple(_name(p) for p in live if superseded(p, clear_number))
    live = [p for p in live if not superseded(p, clear_number)]
    if live and reattach:
        chosen = live[0]
        state = reduce_application([chosen], driver_pod_name=_name(chosen)).state
        extra = tuple(_name(p) for p in live[1:]) + old
        return Adopt(pod=chosen, state=state, extra_live_pods=extra)
    next_number = max((submission_number(p) for p in drivers), default=0) + 1
    replaced = tuple(map(_name, live))
    stopping = tuple(_name(p) for p in drivers if objects.being_deleted(p))
    return SubmitNew(
        submission=max(next_number, try_number),
        live_pods_to_delete=replaced,
        superseded_pods=old,
        wait_for_gone=replaced + old + stopping,
    )
