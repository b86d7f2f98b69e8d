"""Adopt the driver a task instance already has, or submit a new one: a pure decision.

Input is every driver pod that carries the task instance's label (any submission, any
state); output says what the shell does. The rules:
- a live driver (not finished, not being deleted) is adopted, never submitted twice;
- when several are live (only possible if something outside us created one), the oldest
  submission is adopted and the others are listed for deletion;
- otherwise the next submission number is one past the highest seen, so the new pod's
  name never collides with a finished or terminating pod kept from an earlier attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task_identity import submission_number
from airflow_provider_sparkk8s.monitoring.reducer import is_live, reduce_application

Pod = Mapping[str, Any]


@dataclass(frozen=True)
class Adopt:
    pod: Pod
    state: str
    extra_live_pods: tuple[str, ...] = ()  # names to delete: one task instance, one driver


@dataclass(frozen=True)
class SubmitNew:
    submission: int
    live_pods_to_delete: tuple[str, ...] = ()  # set only when reattaching is switched off


def _name(pod: Pod) -> str:
    return objects.name(pod) or ""


def by_submission(pod: Pod) -> tuple[int, str]:
    """Sort key of a task instance's driver pods: oldest submission first, then by name."""
    return submission_number(pod), _name(pod)


def decide(pods: Iterable[Pod], *, reattach: bool = True) -> Adopt | SubmitNew:
    drivers = sorted(pods, key=by_submission)
    live = [p for p in drivers if is_live(p)]
    next_number = max((submission_number(p) for p in drivers), default=0) + 1
    if not live:
        return SubmitNew(submission=next_number)
    if not reattach:
        return SubmitNew(submission=next_number, live_pods_to_delete=tuple(map(_name, live)))
    chosen = live[0]
    state = reduce_application([chosen], driver_pod_name=_name(chosen)).state
    return Adopt(pod=chosen, state=state, extra_live_pods=tuple(_name(p) for p in live[1:]))
