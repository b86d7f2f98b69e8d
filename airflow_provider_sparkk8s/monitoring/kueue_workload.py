"""A Kueue Workload's state as the faces report it: queued (with Kueue's reason) or not.

Pure: the Workload dict (as the API server returns it) in, a sentence out; when a follower
reads it (`read_due`), and how long the application waited (`queued_seconds`).

A pending Workload names only its LocalQueue, so the reader also reads the LocalQueue's
`spec.clusterQueue`, once per application. Reads are for drivers Kueue gates, on the first
look at the gate and then every `READ_INTERVAL` (Kueue's reason changes slowly: quota freed,
a preemption), plus one read after the gate is gone (the admission's timestamp). A store
following 10,000 applications adds no request for the ones Kueue does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from airflow_provider_sparkk8s.records import record

# Seconds between two reads of a gated driver's Workload; sooner while Kueue has not yet
# given a reason (a Workload it has not considered yet says nothing worth a minute's wait).
READ_INTERVAL = 60.0
FIRST_REASON_INTERVAL = 3.0
FIRST_REASON_WINDOW = 60.0  # seconds after the driver's creation


def _condition(workload: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for entry in (workload.get("status") or {}).get("conditions") or ():
        if entry.get("type") == kind:
            return entry  # type: ignore[no-any-return]
    return None


def is_queued(workload: Mapping[str, Any] | None) -> bool:
    """Waiting for quota: not yet admitted, not finished, not deactivated."""
    if not workload:
        return False
    for kind in ("QuotaReserved", "Admitted", "Finished"):
        found = _condition(workload, kind)
        if found is not None and found.get("status") == "True":
            return False
    return (workload.get("spec") or {}).get("active", True) is not False


def queue_status(workload: Mapping[str, Any] | None, cluster_queue: str | None) -> str | None:
    """ "queued in ClusterQueue <cq>: <Kueue's reason>" while the Workload waits, else None.

    The ClusterQueue comes from the caller (the LocalQueue's spec.clusterQueue): a pending
    Workload names only its LocalQueue."""
    if workload is None or not is_queued(workload):
        return None
    local_queue = (workload.get("spec") or {}).get("queueName")
    where = f"ClusterQueue {cluster_queue}" if cluster_queue else f"LocalQueue {local_queue}"
    reserved = _condition(workload, "QuotaReserved")
    message = (reserved or {}).get("message") or "waiting for Kueue to consider it"
    return f"queued in {where}: {message}"


def cluster_queue_of(workload: Mapping[str, Any] | None) -> str | None:
    """The ClusterQueue an admitted (or quota-reserved) Workload names; None before."""
    admission = ((workload or {}).get("status") or {}).get("admission") or {}
    name = admission.get("clusterQueue")
    return name if isinstance(name, str) and name else None


def admitted_at(workload: Mapping[str, Any] | None) -> str | None:
    """When Kueue admitted the Workload (RFC 3339): the true `Admitted` condition's
    lastTransitionTime, else `QuotaReserved`'s (a queue without admission checks sets both
    at once); None while it waits."""
    for kind in ("Admitted", "QuotaReserved"):
        found = _condition(workload or {}, kind)
        if found is not None and found.get("status") == "True":
            stamp = found.get("lastTransitionTime")
            if isinstance(stamp, str) and stamp:
                return stamp
    return None


@record(slots=True)
class QueueView:
    """One read of an application's Workload, as the follower keeps it."""

    found: bool  # False: no Workload (not admitted through one, or already gone)
    status: str | None = None  # "queued in ClusterQueue X: <Kueue's reason>" while it waits
    cluster_queue: str | None = None
    admitted_at: str | None = None
    reason_given: bool = False  # Kueue has written a QuotaReserved condition


def read_interval(view: QueueView | None, waited: float = 0.0) -> float:
    """Seconds until the next read of a gated driver's Workload, after `view`, `waited`
    seconds after the driver's creation. The quick cadence is for Kueue's first word only:
    a Workload still without one after FIRST_REASON_WINDOW (Kueue's manager down, when many
    drivers sit gated at once) is read at the slow cadence like the rest."""
    if view is not None and view.found and not view.reason_given and waited < FIRST_REASON_WINDOW:
        return FIRST_REASON_INTERVAL
    return READ_INTERVAL


def view_of(workload: Mapping[str, Any] | None, cluster_queue: str | None) -> QueueView:
    """The Workload (None: not found) and its ClusterQueue (from its LocalQueue) as a view."""
    if workload is None:
        return QueueView(found=False, cluster_queue=cluster_queue)
    queue = cluster_queue_of(workload) or cluster_queue
    return QueueView(
        found=True,
        status=queue_status(workload, queue),
        cluster_queue=queue,
        admitted_at=admitted_at(workload),
        reason_given=_condition(workload, "QuotaReserved") is not None,
    )


def read_due(
    gated: bool,
    last_read: float | None,
    last_read_gated: bool,
    admission_known: bool,
    now: float,
    interval: float,
) -> bool:
    """Whether a follower reads the Workload now.

    A gated driver: at the first look, then every `interval`. A driver past the gate: once
    more, for the admission's timestamp, unless that is known (or there is no Workload);
    after a read that failed past the gate, again only after `interval`."""
    if gated:
        return last_read is None or now - last_read >= interval
    if admission_known:
        return False
    return last_read is None or last_read_gated or now - last_read >= interval


def epoch(stamp: str | None) -> float | None:
    """An RFC 3339 timestamp (the API server's, `...Z`) as epoch seconds; None if unreadable."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def queued_seconds(created_at: float | None, admitted: float | None) -> float | None:
    """From the driver's creation to its admission (both epoch seconds), never negative."""
    if created_at is None or admitted is None:
        return None
    return round(max(admitted - created_at, 0.0), 3)
