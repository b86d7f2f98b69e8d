"""The store's memory, as pure functions: watch events and full lists merged into a snapshot.

Spark's `ExecutorPodsSnapshotsStore` merges two sources, a watch and a periodic list, into one
view. Here that merge is a pair of pure functions over a frozen `Snapshot` so the ordering
rules can be tested with plain dicts:

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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_sparkk8s.kube.paths import resource_version
from airflow_provider_sparkk8s.monitoring.reducer import Pod, application_id

PodKey = str


@dataclass(frozen=True)
class Snapshot:
    pods: Mapping[PodKey, Pod] = field(default_factory=dict)
    tombstones: Mapping[PodKey, str] = field(default_factory=dict)
    resource_version: str | None = None


@dataclass(frozen=True)
class Change:
    """What a merge did: the new snapshot and the applications whose pods changed."""

    snapshot: Snapshot
    changed_apps: frozenset[str]


def pod_key(pod: Pod) -> PodKey:
    metadata = pod.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}")


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


def apply_event(snapshot: Snapshot, event: Mapping[str, Any]) -> Change:
    """One watch event (ADDED, MODIFIED, DELETED, BOOKMARK) applied to the snapshot."""
    kind = event.get("type")
    obj = event.get("object")
    if not isinstance(obj, Mapping) or kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
        return Change(snapshot, frozenset())
    version = resource_version(obj)
    overall = _latest(snapshot.resource_version, version)
    if kind == "BOOKMARK":
        return Change(replace(snapshot, resource_version=overall), frozenset())

    key = pod_key(obj)
    held = snapshot.pods.get(key)
    held_version = resource_version(held) if held is not None else snapshot.tombstones.get(key)
    if held_version is not None and not is_newer(version, held_version):
        return Change(replace(snapshot, resource_version=overall), frozenset())

    pods = dict(snapshot.pods)
    tombstones = dict(snapshot.tombstones)
    if kind == "DELETED":
        pods.pop(key, None)
        if version is not None:
            tombstones[key] = version
    else:
        pods[key] = obj
        tombstones.pop(key, None)
    return Change(Snapshot(pods, tombstones, overall), frozenset(_apps(held, obj)))


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
        if kept is None or resource_version(kept) != resource_version(pod):
            changed |= _apps(kept, pod)
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


_KEPT_ANNOTATIONS = ("spark.exit-exception",)


def slim_pod(pod: Pod) -> Pod:
    """Only the fields the reducer reads, so a thousand tracked applications stay small."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    annotations = metadata.get("annotations") or {}
    kept_metadata = {
        k: metadata[k]
        for k in (
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "labels",
            "creationTimestamp",
            "deletionTimestamp",
        )
        if k in metadata
    }
    kept_annotations = {k: annotations[k] for k in _KEPT_ANNOTATIONS if k in annotations}
    if kept_annotations:
        kept_metadata["annotations"] = kept_annotations
    return {
        "metadata": kept_metadata,
        "spec": {k: spec[k] for k in ("restartPolicy", "nodeName") if k in spec},
        "status": {
            k: status[k]
            for k in (
                "phase",
                "reason",
                "message",
                "conditions",
                "containerStatuses",
                "initContainerStatuses",
                "startTime",
            )
            if k in status
        },
    }
