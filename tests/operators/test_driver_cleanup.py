"""The clean-up operator's questions to Airflow (a fake task instance answers them); the
operator in real Airflow is in test_operator_controlplane.py."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.task.leftovers import (
    NO_TASK_INSTANCE,
    UNKNOWN_DAG,
    states_by_task_instance,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.operators.driver_cleanup import known_dags, task_states

RUN = "manual__2026-11-29T12:00:00+00:00"


class FakeTaskInstance:
    """Answers the Task SDK's two calls from a table, and records them."""

    def __init__(self, states: dict, runs: dict[str, int]) -> None:
        self.states, self.runs = states, runs
        self.calls: list[tuple] = []

    def get_task_states(self, *, dag_id, task_ids, run_ids):
        self.calls.append(("states", dag_id, tuple(task_ids), tuple(run_ids)))
        return self.states.get((dag_id, tuple(task_ids)), {})

    def get_dr_count(self, *, dag_id):
        self.calls.append(("runs", dag_id))
        return self.runs.get(dag_id, 0)


def test_the_operator_asks_per_dag_and_mapping_and_counts_runs_only_for_the_unanswered():
    refs = [
        TaskInstanceRef("etl", "load", RUN),
        TaskInstanceRef("etl", "fan", RUN, 2),
        TaskInstanceRef("gone_dag", "load", RUN),
        TaskInstanceRef("other", "load", RUN),
    ]
    ti = FakeTaskInstance(
        {("etl", ("load",)): {RUN: {"load": "failed"}}, ("etl", ("fan",)): {RUN: {"fan_2": None}}},
        {"gone_dag": 3},
    )
    answers = task_states(ti, refs)
    assert set(answers) == {("etl", False), ("etl", True), ("gone_dag", False), ("other", False)}
    assert known_dags(ti, answers, refs) == {"gone_dag"}
    assert sorted(c for c in ti.calls if c[0] == "runs") == [
        ("runs", "gone_dag"),
        ("runs", "other"),
    ]
    states = states_by_task_instance(answers, refs, {"gone_dag"})
    assert list(states.values()) == ["failed", None, NO_TASK_INSTANCE, UNKNOWN_DAG]
