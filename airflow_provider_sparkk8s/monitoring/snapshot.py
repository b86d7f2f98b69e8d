"""The store's memory, as pure functions: watch events and full lists merged into a snapshot.

Spark's `ExecutorPodsSnapshotsStore` merges two sources, a watch and a periodic list, into one
view. Here that merge is two functions without I/O, `merge_event` (into the store's dicts,
in place) and `apply_list` (a new frozen `Snapshot`), so the ordering rules can be tested
with plain dicts:

- every pod carries a resourceVersion; an update older than what we hold is ignored, so a slow
  list cannot roll back what the watch already delivered, and a late watch event cannot undo
  a newer list;
- a deletion leaves a tombstone (uid -> resourceVersion) so a list that started before the
  deletion does not bring the pod back; tombstones are dropped once a newer list confirms them;
- a list replaces everything it covers (its `scope`), keeping only the entries that are
  newer than the list itself.

resourceVersions are opaque to clients in principle; in practice they are etcd revisions, and
Spark itself compares them as numbers. When one is not a number we trust arrival order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import Any

from airflow_provider_sparkk8s.monitoring.reducer import EXIT_EXCEPTION_ANNOTATION, Pod
from airflow_provider_sparkk8s.objects import (
    APP_ID_LABEL,
    EXEC_ID_LABEL,
    KUEUE_QUEUE_LABEL,
    ROLE_LABEL,
    application_id,
    name,
    namespace,
    resource_version,
    uid,
)
from airflow_provider_sparkk8s.records import record

PodKey = str


@record
class Snapshot:
    pods: Mapping[PodKey, Pod] = field(default_factory=dict)
    tombstones: Mapping[PodKey, str] = field(default_factory=dict)
    resource_version: str | None = None


@record
class Change:
    """What a merge did: the new snapshot and the applications whose pods changed."""

    snapshot: Snapshot
    changed_apps: frozenset[str]


def pod_key(pod: Pod) -> PodKey:
    """The pod's uid; `namespace/name` for one without (a test's or a metadata-only item)."""
    return uid(pod) or f"{namespace(pod)}/{name(pod)}"


def is_newer(candidate: str | None, current: str | None) -> bool:
    """True when `candidate` should replace `current` (unknown versions count as newer)."""
    if current is None or candidate is None:
        return True
    try:
        return int(candidate) >= int(current)
    except ValueError:
        return True


def _latest(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return b if is_newer(b, a) else a


def _apps(*pods: Pod | None) -> set[str]:
    return {app for pod in pods if pod is not None and (app := application_id(pod))}


def merge_event(
    pods: dict[PodKey, Pod],
    tombstones: dict[PodKey, str],
    overall: str | None,
    event: Mapping[str, Any],
) -> tuple[str | None, frozenset[str]]:
    """One watch event (ADDED, MODIFIED, DELETED, BOOKMARK) merged into the store's own dicts,
    changed in place: returns the snapshot's new resourceVersion and the applications whose
    pods changed. In place because it is the store's hot path: copying 10,000 pods for every
    event would make each change cost O(applications). Any other event changes nothing."""
    kind = event.get("type")
    obj = event.get("object")
    if not isinstance(obj, Mapping) or kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
        return overall, frozenset()
    version = resource_version(obj)
    overall = _latest(overall, version)
    if kind == "BOOKMARK":
        return overall, frozenset()

    key = pod_key(obj)
    held = pods.get(key)
    held_version = resource_version(held) if held is not None else tombstones.get(key)
    if held_version is not None and not is_newer(version, held_version):
        return overall, frozenset()
    if kind == "DELETED":
        pods.pop(key, None)
        if version is not None:
            tombstones[key] = version
    else:
        pods[key] = obj
        tombstones.pop(key, None)
    return overall, frozenset(_apps(held, obj))


def apply_list(
    snapshot: Snapshot,
    items: Iterable[Pod],
    list_version: str | None,
    scope: Callable[[Pod], bool] | None = None,
) -> Change:
    """A full list replaces the pods it covers; entries newer than the list survive it."""
    in_scope = scope or (lambda pod: True)
    listed = {pod_key(pod): pod for pod in items if isinstance(pod, Mapping)}
    pods: dict[PodKey, Pod] = {}
    changed: set[str] = set()

    for key, held in snapshot.pods.items():
        held_version = resource_version(held)
        newer_than_list = list_version is not None and not is_newer(list_version, held_version)
        if not in_scope(held) or newer_than_list or key in listed:
            pods[key] = held
        else:
            changed |= _apps(held)  # gone while we were not watching

    tombstones = {
        key: version
        for key, version in snapshot.tombstones.items()
        if list_version is not None and not is_newer(list_version, version)
    }
    for key, pod in listed.items():
        kept = pods.get(key)
        if key in tombstones:
            continue
        if kept is not None and not is_newer(resource_version(pod), resource_version(kept)):
            continue
        version = resource_version(pod)
        if kept is None or resource_version(kept) != version:
            changed |= _apps(kept, pod)
        elif version is not None:
            continue  # the same version: keep the object every reader already holds
        pods[key] = pod

    overall = snapshot.resource_version
    if scope is None:
        overall = _latest(overall, list_version)
    return Change(Snapshot(pods, tombstones, overall), frozenset(changed))


def pods_by_application(snapshot: Snapshot) -> dict[str, list[Pod]]:
    grouped: dict[str, list[Pod]] = {}
    for pod in snapshot.pods.values():
        app = application_id(pod)
        if app:
            grouped.setdefault(app, []).append(pod)
    return grouped


# What the reducer and the cost per task read, and nothing else: a tracked application costs
# a few hundred bytes per pod instead of the pod's whole JSON (images, env, volumes, managed
# fields).
_KEPT_ANNOTATIONS = (EXIT_EXCEPTION_ANNOTATION,)
_KEPT_LABELS = (ROLE_LABEL, APP_ID_LABEL, EXEC_ID_LABEL, KUEUE_QUEUE_LABEL)
_KEPT_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
)
_KEPT_STATUS = ("phase", "reason", "message", "startTime")
_KEPT_CONDITION = ("type", "status", "reason", "message")
_KEPT_STATE = {
    "waiting": ("reason", "message"),
    "running": ("startedAt",),
    # startedAt: the cost's interval, and the metrics' time for a driver that ended before
    # any look saw it running.
    "terminated": ("exitCode", "reason", "message", "startedAt", "finishedAt"),
}
# Keys whose values come from a small vocabulary (phases, reasons, roles, nodes, container
# names): one shared string each instead of one per pod. A pod's own name or uid is not one.
_SHARED = frozenset(
    {"phase", "type", "status", "reason", "namespace", ROLE_LABEL, "restartPolicy", "nodeName"}
)
# A container's image: read while it waits on a pull (`monitoring.image_pull` names it).
_SHARED_CONTAINER = frozenset({"name", "image"})


def _own(value: Any, shared: bool) -> Any:
    """A value the slim pod can keep without pinning the decoded object's memory.

    A string taken as is sits among the whole pod's decoded objects; kept for hours, a few
    of them per pod hold on to the allocator's pages of everything decoded around them. So
    a kept string is a copy of its own, or the one shared copy of a vocabulary value."""
    if not isinstance(value, str):
        return value
    return sys.intern(value) if shared else value.encode().decode()


def _pick(source: Any, keys: Iterable[str], shared: frozenset[str] = _SHARED) -> dict[str, Any]:
    """The `keys` of `source` that it has; the keys are this module's (shared) strings."""
    if not isinstance(source, Mapping):
        return {}
    return {key: _own(source[key], key in shared) for key in keys if key in source}


def _intern(kept: dict[str, Any], key: str) -> None:
    """The one interned copy of a string others hold too: an application's id (its trigger,
    the store's indexes, each of its pods) and a driver's name (its trigger's). Interned from
    the slim pod's own copy, so the decoded pod is not pinned; the interpreter drops an
    interned string with its last holder."""
    value = kept.get(key)
    if isinstance(value, str):
        kept[key] = sys.intern(value)


def _one_copy_of_equal_times(metadata: dict[str, Any], status: dict[str, Any]) -> None:
    """A pod's equal timestamps as one string (seconds: the creation and the start are often
    the same second, and so is a container's start): about 70 bytes for each one shared."""
    seen: dict[str, str] = {}

    def one(kept: dict[str, Any], key: str) -> None:
        value = kept.get(key)
        if isinstance(value, str):
            kept[key] = seen.setdefault(value, value)

    one(metadata, "creationTimestamp")
    one(status, "startTime")
    for container in status.get("containerStatuses") or ():
        for state in container["state"].values():
            one(state, "startedAt")
            one(state, "finishedAt")


_SHARED_PARTS: dict[Any, Any] = {}  # value -> the one copy every slim pod holds
_MAX_SHARED_PARTS = 4096


def _shared(part: Any) -> Any:
    """One copy of a part that many pods have alike (a node and restart policy; the list of
    conditions, typically five of them, all True): about 1 KiB per pod otherwise. Slim pods
    are never changed in place (a change replaces the pod), so sharing is safe."""
    try:
        key = _frozen(part)
    except TypeError:  # an unhashable value in odd input: keep the pod's own copy
        return part
    if len(_SHARED_PARTS) >= _MAX_SHARED_PARTS:  # bounded: rare parts (messages) stop here
        return _SHARED_PARTS.get(key, part)
    return _SHARED_PARTS.setdefault(key, part)


def _frozen(part: Any) -> Any:
    if isinstance(part, Mapping):
        return frozenset((key, _frozen(value)) for key, value in part.items())
    if isinstance(part, list):
        return tuple(_frozen(value) for value in part)
    hash(part)
    return part


def _slim_container(status: Any) -> dict[str, Any]:
    status = status if isinstance(status, Mapping) else {}
    state = status.get("state") if isinstance(status.get("state"), Mapping) else {}
    kept_state = {
        phase: _pick(state[phase], keys) for phase, keys in _KEPT_STATE.items() if phase in state
    }
    return {**_pick(status, ("name", "image"), _SHARED_CONTAINER), "state": kept_state}


def _counted_request(resource: Any) -> bool:
    """A request the cost per task adds up (`application.following.cost`): cores, memory, GPUs."""
    return isinstance(resource, str) and (
        resource in ("cpu", "memory") or resource.endswith("/gpu")
    )


def _slim_containers(containers: Any) -> list[dict[str, Any]]:
    """Each container's counted requests, nothing else of it (not even its name)."""
    slim: list[dict[str, Any]] = []
    for container in containers if isinstance(containers, list) else ():
        resources = container.get("resources") if isinstance(container, Mapping) else None
        requests = resources.get("requests") if isinstance(resources, Mapping) else None
        kept = {
            sys.intern(key): _own(value, True)
            for key, value in (requests.items() if isinstance(requests, Mapping) else ())
            if _counted_request(key)
        }
        slim.append({"resources": {"requests": kept}} if kept else {})
    return slim if any(slim) else []


def slim_pod(pod: Pod) -> Pod:
    """Only the fields the reducer and the cost read, so ten thousand tracked applications
    stay small."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    kept_metadata = _pick(metadata, _KEPT_METADATA)
    labels = _pick(metadata.get("labels"), _KEPT_LABELS)
    if labels:
        kept_metadata["labels"] = labels
        _intern(labels, APP_ID_LABEL)  # the trigger's, the store's and every pod's: one copy
        if labels.get(ROLE_LABEL) == "driver":
            _intern(kept_metadata, "name")  # the name its trigger was given
    annotations = _pick(metadata.get("annotations"), _KEPT_ANNOTATIONS)
    if annotations:
        kept_metadata["annotations"] = annotations
    kept_status = _pick(status, _KEPT_STATUS)
    if isinstance(status.get("conditions"), list):
        kept_status["conditions"] = _shared(
            [_pick(c, _KEPT_CONDITION) for c in status["conditions"]]
        )
    for key in ("containerStatuses", "initContainerStatuses"):
        if isinstance(status.get(key), list):
            kept_status[key] = [_slim_container(c) for c in status[key]]
    _one_copy_of_equal_times(kept_metadata, kept_status)
    kept_spec = _pick(spec, ("restartPolicy", "nodeName", "schedulingGates"))
    containers = _slim_containers(spec.get("containers"))
    if containers:
        kept_spec["containers"] = containers
    return {
        "metadata": kept_metadata,
        # Shared: pods alike (a node, a restart policy, an executor's requests) hold one copy.
        "spec": _shared(kept_spec),
        "status": kept_status,
    }
