"""Small edits on plain Kubernetes dicts, with fabric8's builder semantics.

Steps must not mutate their inputs, so each step starts from `editable(spark_pod)` and
changes the copies only through these helpers (or top-level keys of the copies). They copy
on write: every dict on the path to a change is copied, lists are replaced by new lists,
and everything unchanged is shared with the input (steps never mutate, so sharing is safe,
and a fold over a dozen steps does not deep-copy the pod a dozen times).
`add_to_list` appends like fabric8's `addNew...`/`addToX(list)`; `merge_into` merges map
keys like `addToX(map)` (new value wins).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from airflow_provider_sparkk8s.submission.spec import KubeObject, SparkPod

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any


def editable(spark_pod: SparkPod) -> tuple[KubeObject, KubeObject]:
    """Shallow copies of the pod and the container, to change through these helpers."""
    return dict(spark_pod.pod), dict(spark_pod.container)


def child(obj: KubeObject, *path: str) -> KubeObject:
    """A private copy of the dict at `path`, created empty where missing (fabric8's
    `editOrNew...`), put in place so that changes to it show in `obj`."""
    for key in path:
        copied = dict(obj.get(key) or {})
        obj[key] = copied
        obj = copied
    return obj


def add_to_list(obj: KubeObject, path: tuple[str, ...], items: Iterable[Any]) -> None:
    """Append `items` to the list at `path`; a missing list is only created when non-empty."""
    items = list(items)
    if not items:
        return
    parent = child(obj, *path[:-1])
    existing = parent.get(path[-1]) or []
    parent[path[-1]] = [*existing, *items]


def merge_into(obj: KubeObject, path: tuple[str, ...], entries: Mapping[str, Any]) -> None:
    """Merge `entries` into the map at `path` (new values win); nothing is created if empty."""
    if not entries:
        return
    parent = child(obj, *path[:-1])
    merged = dict(parent.get(path[-1]) or {})
    merged.update(entries)
    parent[path[-1]] = merged


def env_var(name: str, value: str) -> KubeObject:
    return {"name": name, "value": value}


def volume_mount(name: str, mount_path: str) -> KubeObject:
    return {"name": name, "mountPath": mount_path}
