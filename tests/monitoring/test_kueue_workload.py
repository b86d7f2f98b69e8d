"""A Workload's queue state, and a driver held by Kueue's gate, on plain dicts shaped as
Kueue v0.17 and the API server write them."""

from __future__ import annotations

from airflow_provider_sparkk8s.monitoring.kueue_workload import is_queued, queue_status
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from airflow_provider_sparkk8s.monitoring.snapshot import slim_pod

PENDING_MESSAGE = (
    "couldn't assign flavors to pod set driver: insufficient unused quota for cpu in flavor "
    "default-flavor, 1 more needed"
)


def workload(*conditions: tuple[str, str, str, str], active: bool = True) -> dict:
    return {
        "spec": {"queueName": "team-queue", "active": active},
        "status": {
            "conditions": [
                {"type": kind, "status": status, "reason": reason, "message": message}
                for kind, status, reason, message in conditions
            ]
        },
    }


def test_pending_for_quota_is_queued_with_kueues_message():
    pending = workload(("QuotaReserved", "False", "Pending", PENDING_MESSAGE))
    assert is_queued(pending)
    assert queue_status(pending, "cq") == f"queued in ClusterQueue cq: {PENDING_MESSAGE}"
    assert queue_status(pending, None) == f"queued in LocalQueue team-queue: {PENDING_MESSAGE}"


def test_a_new_workload_without_conditions_is_queued():
    fresh = {"spec": {"queueName": "q"}}
    assert (
        queue_status(fresh, "cq") == "queued in ClusterQueue cq: waiting for Kueue to consider it"
    )


def test_admitted_finished_or_deactivated_is_not_queued():
    admitted = workload(
        ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        ("Admitted", "True", "Admitted", "The workload is admitted"),
    )
    finished = workload(("Finished", "True", "Succeeded", "Pods succeeded: 1/1."))
    inactive = workload(("QuotaReserved", "False", "Pending", PENDING_MESSAGE), active=False)
    for state in (admitted, finished, inactive, None):
        assert not is_queued(state)
        assert queue_status(state, "cq") is None


GATED_DRIVER = {
    "metadata": {
        "name": "app-driver",
        "labels": {
            "spark-role": "driver",
            "spark-app-selector": "spark-1",
            "kueue.x-k8s.io/queue-name": "team-queue",
        },
    },
    "spec": {
        "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        "containers": [{"name": "spark-kubernetes-driver"}],
    },
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ],
    },
}


def test_a_driver_held_by_kueues_gate_is_queued_not_a_problem():
    state = reduce_application([slim_pod(GATED_DRIVER)])
    assert (state.state, state.reason, state.problem) == ("pending", "QueuedByKueue", False)
    assert "queued in Kueue's LocalQueue team-queue" in (state.message or "")


def test_once_ungated_the_scheduler_reason_is_back():
    ungated = {**GATED_DRIVER, "spec": {"containers": GATED_DRIVER["spec"]["containers"]}}
    assert reduce_application([slim_pod(ungated)]).reason == "SchedulingGated"
