"""A Kueue Workload's state as the faces report it: queued (with Kueue's reason) or not.

Pure: the Workload dict (as the API server returns it) in, a sentence out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
