"""A Workload's queue state, and a driver held by Kueue's gate, on plain dicts shaped as
Kueue v0.17 and the API server write them."""

from __future__ import annotations

from airflow_provider_sparkk8s.monitoring.kueue_workload import (
    FIRST_REASON_INTERVAL,
    FIRST_REASON_WINDOW,
    READ_INTERVAL,
    QueueView,
    admitted_at,
    epoch,
    is_queued,
    queue_status,
    queued_seconds,
    read_due,
    read_interval,
    view_of,
)
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


# ------------------------------------------------------------------ reads and their cadence


def admitted_workload(at: str = "2026-01-01T00:01:30Z") -> dict:
    found = workload(
        ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        ("Admitted", "True", "Admitted", "The workload is admitted"),
    )
    for entry in found["status"]["conditions"]:
        entry["lastTransitionTime"] = at
    found["status"]["admission"] = {"clusterQueue": "cq-from-admission"}
    return found


def test_a_view_of_a_pending_workload_names_the_cluster_queue_and_kueues_reason():
    view = view_of(workload(("QuotaReserved", "False", "Pending", PENDING_MESSAGE)), "cq")
    assert view == QueueView(
        found=True,
        status=f"queued in ClusterQueue cq: {PENDING_MESSAGE}",
        cluster_queue="cq",
        admitted_at=None,
        reason_given=True,
    )
    fresh = view_of({"spec": {"queueName": "q"}}, "cq")
    assert not fresh.reason_given and read_interval(fresh) == FIRST_REASON_INTERVAL
    assert read_interval(view) == READ_INTERVAL
    # Still no word from Kueue a minute on (its manager down?): the slow cadence, so 10,000
    # gated drivers do not become thousands of reads a second.
    assert read_interval(fresh, FIRST_REASON_WINDOW - 1) == FIRST_REASON_INTERVAL
    assert read_interval(fresh, FIRST_REASON_WINDOW) == READ_INTERVAL


def test_a_view_of_an_admitted_workload_holds_the_admissions_time_and_its_cluster_queue():
    view = view_of(admitted_workload(), None)
    assert (view.status, view.cluster_queue) == (None, "cq-from-admission")
    assert view.admitted_at == "2026-01-01T00:01:30Z"
    assert admitted_at(workload(("QuotaReserved", "False", "Pending", "x"))) is None
    assert view_of(None, "cq") == QueueView(found=False, cluster_queue="cq")


def test_reads_are_due_at_the_gate_then_slowly_then_once_past_it():
    # gated: first look, then only after the interval
    assert read_due(True, None, False, False, 100.0, 60.0)
    assert not read_due(True, 100.0, True, False, 159.0, 60.0)
    assert read_due(True, 100.0, True, False, 160.0, 60.0)
    # past the gate: once, for the admission's time, unless known
    assert read_due(False, 100.0, True, False, 101.0, 60.0)
    assert not read_due(False, 100.0, True, True, 101.0, 60.0)
    # a read past the gate that failed: again only after the interval
    assert not read_due(False, 101.0, False, False, 120.0, 60.0)
    assert read_due(False, 101.0, False, False, 161.0, 60.0)


def test_queued_seconds_from_the_api_servers_timestamps():
    created, admitted = epoch("2026-01-01T00:00:00Z"), epoch("2026-01-01T00:01:30Z")
    assert queued_seconds(created, admitted) == 90.0
    assert queued_seconds(admitted, created) == 0.0  # clocks never make it negative
    assert queued_seconds(None, admitted) is None
    assert epoch("not a time") is None and epoch(None) is None
