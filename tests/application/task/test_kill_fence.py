"""The kill fence: which task-instance states prove a user's kill, live and ended drivers."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.task.kill_fence import (
    GONE,
    TaskStateRead,
    kill_verdict,
    read_from_answer,
    spare_reason,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef

REF = TaskInstanceRef("dag", "task", "run-1")
MAPPED = TaskInstanceRef("dag", "task", "run-1", map_index=3)


@pytest.mark.parametrize("driver_live", [True, False])
@pytest.mark.parametrize("state", ["failed", "success", "skipped", "upstream_failed", "removed"])
def test_a_finished_task_instance_is_a_users_kill(state, driver_live):
    assert spare_reason(TaskStateRead(state), driver_live) is None


@pytest.mark.parametrize("driver_live", [True, False])
def test_a_cleared_or_deleted_task_instance_is_a_users_kill(driver_live):
    assert spare_reason(TaskStateRead(None), driver_live) is None
    assert spare_reason(TaskStateRead(GONE), driver_live) is None


@pytest.mark.parametrize("driver_live", [True, False])
def test_a_still_deferred_task_is_a_moved_trigger_and_spares_the_driver(driver_live):
    reason = spare_reason(TaskStateRead("deferred"), driver_live)
    assert reason is not None and "moved to another triggerer" in reason


@pytest.mark.parametrize("driver_live", [True, False])
def test_a_try_airflow_failed_itself_keeps_its_driver_for_the_next(driver_live):
    reason = spare_reason(TaskStateRead("up_for_retry"), driver_live)
    assert reason is not None and "next try adopts" in reason


@pytest.mark.parametrize("state", ["scheduled", "queued", "running", "restarting"])
def test_a_task_that_went_on_deletes_a_live_driver_and_keeps_an_ended_one(state):
    assert spare_reason(TaskStateRead(state), driver_live=True) is None
    ended = spare_reason(TaskStateRead(state), driver_live=False)
    assert ended is not None and state in ended and "nothing to stop" in ended


@pytest.mark.parametrize("driver_live", [True, False])
def test_an_unreadable_state_never_deletes(driver_live):
    read = TaskStateRead.unreadable("RuntimeError: no triggerer supervisor to ask")
    reason = spare_reason(read, driver_live)
    assert reason is not None and "no triggerer supervisor to ask" in reason
    assert read.describe().startswith("unreadable")


def test_the_answer_is_read_by_run_and_task_key():
    answer = {"run-1": {"task": "deferred", "task_3": "failed"}, "run-2": {"task": "success"}}
    assert read_from_answer(answer, REF) == TaskStateRead("deferred")
    assert read_from_answer(answer, MAPPED) == TaskStateRead("failed")
    assert read_from_answer({"run-1": {"task": None}}, REF) == TaskStateRead(None)
    assert read_from_answer({}, REF) == TaskStateRead(GONE)
    assert read_from_answer({"run-2": {"task": "success"}}, REF) == TaskStateRead(GONE)


def test_an_enum_state_is_read_as_its_value():
    class State:
        value = "deferred"

    assert read_from_answer({"run-1": {"task": State()}}, REF) == TaskStateRead("deferred")


def driver(phase: str = "Running", **annotations: str) -> dict:
    return {
        "metadata": {
            "name": "d",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"spark-role": "driver", "sparkk8s.io/try-number": "1"},
            "annotations": annotations,
        },
        "status": {"phase": phase},
    }


def test_a_newer_tries_adoption_is_named_before_the_state():
    """A clear without a reset: try 2 adopted the driver and deferred again, so the state
    reads deferred too; the adoption is the reason given."""
    adopted = driver(**{"sparkk8s.io/adopted-by-try": "2"})
    reason = kill_verdict(TaskStateRead("deferred"), adopted, 1)
    assert reason is not None and reason.startswith("it was adopted by try 2")
    assert kill_verdict(TaskStateRead("failed"), adopted, 1) == reason


def test_the_verdict_reads_the_pod_for_liveness_and_a_gone_pod_for_the_state():
    assert kill_verdict(TaskStateRead("running"), driver("Running"), 1) is None
    ended = kill_verdict(TaskStateRead("running"), driver("Succeeded"), 1)
    assert ended is not None and "nothing to stop" in ended
    assert kill_verdict(TaskStateRead("failed"), None, 1) is None  # gone: the delete says so
    moved = kill_verdict(TaskStateRead("deferred"), driver("Running"), 1)
    assert moved is not None and "moved to another triggerer" in moved
