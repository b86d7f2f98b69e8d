"""Why the cluster took a driver away, said as such: its `DisruptionTarget` condition. Pure.

Before the cluster deletes a pod for its own reasons it marks it with a true
`DisruptionTarget` condition (Kubernetes 1.26+, on by default since 1.31): the Eviction API
(`kubectl drain`, a node autoscaler's consolidation), the scheduler's preemption, the taint
manager, the kubelet. The driver then ends like any stopped container (SIGTERM: exit 143,
reason `Error`), or its pod is gone before an end was reported. Either would read as
`Error` or `DriverPodNotFound`; the condition's reason is the cause instead, with what it
means as the message. The failure kind (`failure_kind`) is infrastructure either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

CONDITION = "DisruptionTarget"
# A condition stamped this long after the container's end still counts as its cause: the
# kubelet records the end and the API server's condition on their own clocks, in seconds.
END_SLACK_SECONDS = 1.0
# What each reason Kubernetes gives means, for the message; others are shown as given.
MEANINGS = {
    "EvictionByEvictionAPI": "evicted through the Eviction API (kubectl drain, a node "
    "autoscaler's consolidation, a descheduler)",
    "PreemptionByScheduler": "preempted by the scheduler for a pod of higher priority",
    "DeletionByTaintManager": "deleted by the taint manager (a NoExecute taint on its node)",
    "DeletionByPodGC": "deleted by the pod garbage collector (its node is gone)",
    "TerminationByKubelet": "terminated by the kubelet (node pressure or a node shutdown)",
}
# Ends that say only "it stopped": a disruption says why.
UNEXPLAINED_ENDS = frozenset({"Error", "PodFailed", "DriverPodNotFound"})


def _true_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for entry in conditions if isinstance(conditions, list) else ():
        if (
            isinstance(entry, Mapping)
            and entry.get("type") == CONDITION
            and entry.get("status") == "True"
        ):
            return entry
    return None


def condition(pod: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(reason, message) of the pod's true DisruptionTarget condition, if it has one."""
    entry = _true_condition(pod)
    if entry is None:
        return None
    reason, message = entry.get("reason"), entry.get("message")
    return (
        reason if isinstance(reason, str) and reason else CONDITION,
        message if isinstance(message, str) and message else None,
    )


def marked_at(pod: Mapping[str, Any]) -> str | None:
    """The `lastTransitionTime` of the pod's true DisruptionTarget condition, if it has one."""
    entry = _true_condition(pod)
    stamp = None if entry is None else entry.get("lastTransitionTime")
    return stamp if isinstance(stamp, str) else None


def marked_after_end(marked: str | None, finished: str | None) -> bool:
    """Whether the condition came after the container had already ended: then the driver
    ended on its own (a failed application), and the cluster only took its remains."""
    if not marked or not finished:
        return False
    try:
        gap = datetime.fromisoformat(marked) - datetime.fromisoformat(finished)
    except ValueError:
        return False
    return gap.total_seconds() > END_SLACK_SECONDS


def explains(disruption: str | None, end_reason: str | None) -> bool:
    """Whether a disruption condition's reason is the better cause of this end: a condition
    was set ("Deleted", a deletion without one, is not a cause of its own) and the end's own
    reason says nothing more (an OOMKilled or an Evicted stays)."""
    if not disruption or disruption == "Deleted":
        return False
    return (end_reason or "Error") in UNEXPLAINED_ENDS


def message(disruption: str, detail: str | None, driver_pod: str | None = None) -> str:
    """The message of a disrupted driver's end: "driver pod X was evicted through the
    Eviction API (...)", then the condition's own message if it has one."""
    what = MEANINGS.get(disruption, f"taken by the cluster ({CONDITION}: {disruption})")
    pod = f"driver pod {driver_pod}" if driver_pod else "the driver pod"
    text = f"{pod} was {what}"
    return f"{text} (Kubernetes: {detail})" if detail else text
