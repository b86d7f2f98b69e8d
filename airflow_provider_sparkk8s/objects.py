"""Readers of Kubernetes objects as plain dicts: the one place that knows where a field lives.

Every reader takes whatever the API server (or a test) handed over and never raises on a
missing or mistyped field: an absent name is None, absent labels are empty. Spark's own
labels (`spark-app-selector`, `spark-role`, `spark-exec-id`) are named here too, so nothing
else spells them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

Obj = Mapping[str, "Any"]

APP_ID_LABEL = "spark-app-selector"
ROLE_LABEL = "spark-role"
EXEC_ID_LABEL = "spark-exec-id"
# The Spark containers' names when no pod template names its own (Spark's Constants).
DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"
# Kueue admission (submission/kueue.py): the driver's LocalQueue, and the gate Kueue's webhook
# holds a queued pod with until its Workload is admitted.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def metadata(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("metadata"))


def name(obj: Obj) -> str | None:
    return _str(metadata(obj).get("name"))


def namespace(obj: Obj) -> str | None:
    return _str(metadata(obj).get("namespace"))


def uid(obj: Obj) -> str | None:
    return _str(metadata(obj).get("uid"))


def labels(obj: Obj) -> Mapping[str, Any]:
    return _dict(metadata(obj).get("labels"))


def annotation(obj: Obj, key: str) -> str | None:
    """One annotation's value, None when absent or empty."""
    return _str(_dict(metadata(obj).get("annotations")).get(key))


def being_deleted(obj: Obj) -> bool:
    """`metadata.deletionTimestamp` is set: the object is on its way out."""
    return bool(metadata(obj).get("deletionTimestamp"))


def application_id(obj: Obj) -> str | None:
    """Spark's application id label (`spark-app-selector`), on every pod of an application."""
    return _str(labels(obj).get(APP_ID_LABEL))


def spark_role(obj: Obj) -> str | None:
    """`driver` or `executor` (Spark's `spark-role` label)."""
    return _str(labels(obj).get(ROLE_LABEL))


def executor_id(obj: Obj) -> str | None:
    """An executor pod's id within its application (Spark's `spark-exec-id` label)."""
    return _str(labels(obj).get(EXEC_ID_LABEL))


def created_at(obj: Obj) -> str:
    """`metadata.creationTimestamp` (RFC 3339, so it sorts as text), "" when absent."""
    return str(metadata(obj).get("creationTimestamp") or "")


def resource_version(obj: Obj) -> str | None:
    """An object's (or a list's) `metadata.resourceVersion`, or None when it has none."""
    value = metadata(obj).get("resourceVersion")
    return str(value) if value not in (None, "") else None


def describe(obj: Obj) -> str:
    """`Kind/name`, as an error message or a log names an object."""
    return f"{obj.get('kind')}/{metadata(obj).get('name')}"


def newest_driver(pods: Iterable[Obj]) -> Obj | None:
    """The newest driver among `pods` (a selector may match several runs of one job, and a
    resubmission keeps the app id): the latest `creationTimestamp`, the first one on a tie."""
    drivers = [pod for pod in pods if spark_role(pod) == "driver"]
    return max(drivers, key=created_at, default=None)


def kueue_queue(pod: Mapping[str, Any]) -> str | None:
    """The LocalQueue a pod waits in while Kueue's admission gate holds it; None otherwise."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    if not any(isinstance(g, Mapping) and g.get("name") == KUEUE_ADMISSION_GATE for g in gates):
        return None
    queue = ((pod.get("metadata") or {}).get("labels") or {}).get(KUEUE_QUEUE_LABEL)
    return queue if isinstance(queue, str) else "?"


# A pattern string: re compiles it on first use (a CLI submission never reads one).
_QUANTITY = r"\+?((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)"
_SUFFIX = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "P": 1e15, "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
    "Pi": 2.0**50, "Ei": 2.0**60,
}  # fmt: skip


def quantity(value: Any) -> float:
    """A Kubernetes quantity as a number (`500m` -> 0.5, `1Gi` -> 2**30); 0 if unreadable
    (the rendering refused unreadable quantities already)."""
    match = re.fullmatch(_QUANTITY, str(value).strip())
    if not match or match.group(2) not in _SUFFIX:
        return 0.0
    return float(match.group(1)) * _SUFFIX[match.group(2)]
