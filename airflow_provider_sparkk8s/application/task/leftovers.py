"""Drivers left behind by task instances that ended without them: a pure selection.

A worker killed hard (or an interrupted `airflow dags test`) can leave a driver running
after its task instance has failed, or beside a new DAG run's driver. Task identity is per
task instance, so nothing adopts that driver again. Every driver the operator submits
carries its exact task instance (annotation `sparkk8s.io/task-instance-key`, checked against
the `sparkk8s.io/task-instance` label); the clean-up asks Airflow for those task instances'
states and deletes a live driver only when its task instance has finished (success, failed,
skipped, upstream_failed, removed) or no longer exists while its DAG still has runs here (its
DAG run was deleted). A task instance that is queued, scheduled, running, deferred, up for
retry, restarting or cleared (no state) may still adopt its driver, so that driver stays; so
does a driver whose DAG has no run at all in this Airflow (another Airflow's, or a DAG deleted
here): not ours to judge.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
    ref_of_pod,
)
from airflow_provider_sparkk8s.monitoring.reducer import is_live
from airflow_provider_sparkk8s.records import record

Pod = Mapping[str, Any]
FINISHED_STATES = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
NO_TASK_INSTANCE = "gone"  # the task instance is not in Airflow any more
UNKNOWN_DAG = "unknown"  # this Airflow has no run of the DAG at all: kept
# Driver pods the operator submitted (the label every one of them carries).
SUBMITTED_DRIVERS_SELECTOR = f"{TASK_INSTANCE_LABEL},spark-role=driver"


@record
class Leftover:
    namespace: str
    pod: str
    task_instance: TaskInstanceRef
    state: str

    def describe(self) -> str:
        status = "no longer exists" if self.state == NO_TASK_INSTANCE else f"is {self.state}"
        return (
            f"{self.namespace}:{self.pod} (task instance {self.task_instance.describe()} {status})"
        )


def live_submitted_drivers(pods: Iterable[Pod]) -> list[tuple[Pod, TaskInstanceRef]]:
    """The live driver pods that name their task instance, with it."""
    found = []
    for pod in pods:
        ref = ref_of_pod(pod)
        if ref is not None and is_live(pod):
            found.append((pod, ref))
    return found


QueryGroup = tuple[str, bool]  # (dag_id, mapped)
Answers = Mapping[QueryGroup, Mapping[str, Mapping[str, Any]]]


def query_group(ref: TaskInstanceRef) -> QueryGroup:
    """Which `get_task_states` call asks about `ref`: one per DAG for unmapped task instances
    and one for mapped ones, since their keys can collide in one answer (task `x_0`, and
    task `x` at map index 0, are both `x_0`)."""
    return ref.dag_id, ref.map_index >= 0


def state_key(ref: TaskInstanceRef) -> str:
    """The task's key in `get_task_states`' answer: `task_id`, or `task_id_<map index>`."""
    return ref.task_id if ref.map_index < 0 else f"{ref.task_id}_{ref.map_index}"


def answered(answers: Answers, ref: TaskInstanceRef) -> bool:
    return state_key(ref) in ((answers.get(query_group(ref)) or {}).get(ref.run_id) or {})


def states_by_task_instance(
    answers: Answers, refs: Iterable[TaskInstanceRef], known_dags: Collection[str]
) -> dict[TaskInstanceRef, str | None]:
    """Each task instance's state from Airflow's answers per query group, each in the Task
    SDK's `get_task_states` form ({run_id: {task key: state}}). A task instance missing from
    the answer is NO_TASK_INSTANCE when its DAG is in `known_dags` (it has runs here), else
    UNKNOWN_DAG; None is a cleared one."""
    states: dict[TaskInstanceRef, str | None] = {}
    for ref in refs:
        if not answered(answers, ref):
            states[ref] = NO_TASK_INSTANCE if ref.dag_id in known_dags else UNKNOWN_DAG
            continue
        state = answers[query_group(ref)][ref.run_id][state_key(ref)]
        states[ref] = None if state is None else str(getattr(state, "value", state))
    return states


def leftover_drivers(
    drivers: Iterable[tuple[Pod, TaskInstanceRef]], states: Mapping[TaskInstanceRef, str | None]
) -> list[Leftover]:
    """The drivers whose task instance has finished or is gone; the others stay."""
    found = []
    for pod, ref in drivers:
        state = states.get(ref)
        if state in FINISHED_STATES or state == NO_TASK_INSTANCE:
            namespace, name = objects.namespace(pod) or "", objects.name(pod) or ""
            found.append(Leftover(namespace, name, ref, str(state)))
    return found
