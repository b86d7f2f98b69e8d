"""A Workload's queue state on plain dicts shaped as Kueue v0.17 writes them."""

from __future__ import annotations

from airflow_provider_sparkk8s.monitoring.kueue_workload import is_queued, queue_status

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
