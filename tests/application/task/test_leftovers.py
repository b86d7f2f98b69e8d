"""Which leftover drivers the clean-up deletes (plain pods, states as Airflow answers)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.task.leftovers import (
    NO_TASK_INSTANCE,
    UNKNOWN_DAG,
    leftover_drivers,
    live_submitted_drivers,
    query_group,
    states_by_task_instance,
)
from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_ANNOTATION,
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
)
from tests.application.task.test_reattach import FAILED, RUNNING, driver

RUN = "manual__2026-11-29T12:00:00+00:00"


def submitted(name: str, task_id: str, status: dict, map_index: int = -1) -> dict:
    """A driver pod as the operator submits it: label and annotation of its task instance."""
    ref = TaskInstanceRef("etl", task_id, RUN, map_index)
    pod = driver(name, 1, status)
    pod["metadata"]["namespace"] = "team"
    pod["metadata"]["labels"][TASK_INSTANCE_LABEL] = ref.digest
    pod["metadata"]["annotations"] = {TASK_INSTANCE_ANNOTATION: ref.key}
    return pod


def leftovers(pods: list[dict], answer: dict, mapped: dict | None = None, known=("etl",)) -> list:
    """`answer` and `mapped`: get_task_states' answers for the unmapped and mapped ones."""
    drivers = live_submitted_drivers(pods)
    refs = [ref for _, ref in drivers]
    answers = {("etl", False): answer, ("etl", True): mapped or {}}
    return leftover_drivers(drivers, states_by_task_instance(answers, refs, known))


@pytest.mark.parametrize("state", ["success", "failed", "skipped", "upstream_failed", "removed"])
def test_a_live_driver_of_a_finished_task_instance_is_a_leftover(state):
    (found,) = leftovers([submitted("a-driver", "load", RUNNING)], {RUN: {"load": state}})
    assert (found.namespace, found.pod, found.state) == ("team", "a-driver", state)
    assert found.task_instance == TaskInstanceRef("etl", "load", RUN)
    assert found.describe() == f"team:a-driver (task instance etl.load of run {RUN} is {state})"


@pytest.mark.parametrize(
    "state", [None, "running", "deferred", "queued", "scheduled", "up_for_retry", "restarting"]
)
def test_a_task_instance_that_may_still_adopt_its_driver_keeps_it(state):
    assert leftovers([submitted("a-driver", "load", RUNNING)], {RUN: {"load": state}}) == []


def test_a_driver_whose_task_instance_is_gone_is_a_leftover():
    (found,) = leftovers([submitted("a-driver", "load", RUNNING)], {RUN: {"other": "running"}})
    assert found.state == NO_TASK_INSTANCE
    assert "no longer exists" in found.describe()
    (found,) = leftovers([submitted("b-driver", "load", RUNNING)], {})  # the run was deleted
    assert found.pod == "b-driver"


def test_a_driver_of_a_dag_this_airflow_has_no_run_of_stays():
    """Another Airflow's (same namespace), or a DAG deleted here: not ours to judge."""
    found = leftovers([submitted("a-driver", "load", RUNNING)], {}, known=())
    assert found == []
    (state,) = states_by_task_instance({}, [TaskInstanceRef("etl", "load", RUN)], ()).values()
    assert state == UNKNOWN_DAG


def test_mapped_task_instances_are_asked_apart_by_their_map_index():
    pods = [submitted("m0", "load", RUNNING, 0), submitted("m1", "load", RUNNING, 1)]
    found = leftovers(pods, {}, mapped={RUN: {"load_0": "failed", "load_1": "running"}})
    assert [(f.pod, f.task_instance.map_index) for f in found] == [("m0", 0)]
    assert "etl.load[0]" in found[0].describe()
    # task `load_0` (unmapped) and task `load` at index 0 share a key; asked apart, each
    # reads its own answer
    pods = [submitted("u", "load_0", RUNNING), submitted("m0", "load", RUNNING, 0)]
    found = leftovers(pods, {RUN: {"load_0": "running"}}, mapped={RUN: {"load_0": "failed"}})
    assert [f.pod for f in found] == ["m0"]
    assert query_group(TaskInstanceRef("etl", "load", RUN, 0)) == ("etl", True)


def test_finished_drivers_and_foreign_pods_are_left_alone():
    foreign = driver("x-driver", 1, RUNNING)  # not submitted by the operator
    done = submitted("b-driver", "load", FAILED)  # finished: nothing to stop
    assert leftovers([foreign, done], {RUN: {"load": "failed"}}) == []
