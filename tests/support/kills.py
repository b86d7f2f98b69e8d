"""A trigger's kill as the triggerer runs it after a user's action, outside a triggerer.

`on_kill` deletes only when Airflow's answer for the task instance proves a user's kill
(`application.task.kill_fence`); a test that calls `on_kill` itself has no triggerer supervisor
to ask, so it says what Airflow would answer."""

from __future__ import annotations

from typing import TypeVar

from airflow_provider_sparkk8s.application.task.kill_fence import TaskStateRead
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

T = TypeVar("T", bound=SparkK8sApplicationTrigger)


def answered(trigger: T, state: str | None = "failed") -> T:
    """`trigger`, whose kill reads the task instance in `state` (default: marked failed)."""

    async def task_state() -> TaskStateRead:
        return TaskStateRead(state)

    trigger._task_state = task_state  # type: ignore[method-assign]
    return trigger
