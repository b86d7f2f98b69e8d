"""The adopt-or-submit decision over the task instance's driver pods (plain dicts)."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.task.reattach import Adopt, SubmitNew, decide
from airflow_provider_sparkk8s.application.task.task_identity import SUBMISSION_LABEL
from airflow_provider_sparkk8s.monitoring.reducer import is_live
from testenv.fakes import driver_status


def driver(name: str, number: int, status: dict, deleting: bool = False) -> dict:
    metadata = {"name": name, "labels": {"spark-role": "driver", SUBMISSION_LABEL: str(number)}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-29T18:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": "n"}, "status": status}


RUNNING = driver_status("running")
SUCCEEDED = driver_status("finished")
FAILED = {
    "phase": "Failed",
    "containerStatuses": [
        {"name": "spark-kubernetes-driver", "state": {"terminated": {"exitCode": 1}}}
    ],
}
PENDING = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}


def test_no_driver_yet_means_submission_one():
    assert decide([]) == SubmitNew(submission=1)


def test_a_running_driver_is_adopted():
    pod = driver("a-1-driver", 1, RUNNING)
    decision = decide([pod])
    assert isinstance(decision, Adopt)
    assert decision.pod is pod and decision.state == "running"


def test_a_pending_driver_is_adopted_too():
    decision = decide([driver("a-1-driver", 1, PENDING)])
    assert isinstance(decision, Adopt) and decision.state == "pending"


def test_after_finished_attempts_the_next_number_is_past_the_highest():
    pods = [driver("a-1-driver", 1, FAILED), driver("a-2-driver", 2, SUCCEEDED)]
    assert decide(pods) == SubmitNew(submission=3)


def test_a_pod_being_deleted_is_not_adopted_its_name_is_skipped_and_its_end_awaited():
    pods = [driver("a-1-driver", 1, RUNNING, deleting=True)]
    assert not is_live(pods[0])
    assert decide(pods) == SubmitNew(submission=2, wait_for_gone=("a-1-driver",))


def test_two_live_drivers_keep_the_oldest_and_name_the_other_for_deletion():
    pods = [driver("a-2-driver", 2, RUNNING), driver("a-1-driver", 1, PENDING)]
    decision = decide(pods)
    assert isinstance(decision, Adopt)
    assert decision.pod["metadata"]["name"] == "a-1-driver"
    assert decision.extra_live_pods == ("a-2-driver",)


def test_with_reattach_off_live_drivers_are_replaced_not_adopted():
    pods = [driver("a-1-driver", 1, RUNNING), driver("a-2-driver", 2, FAILED)]
    assert decide(pods, reattach=False) == SubmitNew(
        submission=3, live_pods_to_delete=("a-1-driver",), wait_for_gone=("a-1-driver",)
    )
