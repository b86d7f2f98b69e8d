"""Copy-on-write edits of pod and container dicts, with fabric8's merge semantics.

Spark's steps edit the pod through fabric8 builders: `addToVolumes`, `addNewEnv`,
`addToVolumeMounts` append to whatever list is already there (a template's entries stay in
front, nothing is de-duplicated); `addToLabels`-style calls merge map keys, the new value
winning. These helpers do the same on plain dicts and never mutate their arguments: the
path to the changed field is copied, everything else is shared (every step is pure, so
sharing unchanged sub-objects is safe).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from airflow_provider_sparkk8s.submission.spec import KubeObject, SparkPod


def append_to_list(obj: Mapping[str, Any], field: str, items: Iterable[Any]) -> KubeObject:
    """`obj` with `items` appended to the list `obj[field]` (created when absent)."""
    new_items = list(items)
    copied = dict(obj)
    if new_items:
        copied[field] = [*(obj.get(field) or ()), *new_items]
    return copied


def merge_into_map(obj: Mapping[str, Any], field: str, entries: Mapping[str, Any]) -> KubeObject:
    """`obj` with `entries` merged into the map `obj[field]`; new values win."""
    copied = dict(obj)
    if entries:
        copied[field] = {**(obj.get(field) or {}), **entries}
    return copied


def pod_spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def with_pod_volumes(pod: Mapping[str, Any], volumes: Iterable[KubeObject]) -> KubeObject:
    """The pod with `volumes` appended to `spec.volumes` (fabric8 `addToVolumes`)."""
    new_volumes = list(volumes)
    if not new_volumes:
        return dict(pod)
    return {**pod, "spec": append_to_list(pod_spec(pod), "volumes", new_volumes)}


def with_volume_mounts(container: Mapping[str, Any], mounts: Iterable[KubeObject]) -> KubeObject:
    return append_to_list(container, "volumeMounts", mounts)


def with_env(container: Mapping[str, Any], env: Iterable[KubeObject]) -> KubeObject:
    return append_to_list(container, "env", env)


def add_volumes_and_mounts(
    pod: SparkPod,
    volumes: Iterable[KubeObject],
    mounts: Iterable[KubeObject],
    env: Iterable[KubeObject] = (),
) -> SparkPod:
    """A new SparkPod with pod volumes, container mounts and container env appended."""
    container = with_env(with_volume_mounts(pod.container, mounts), env)
    return SparkPod(pod=with_pod_volumes(pod.pod, volumes), container=container)


def container_mounts(container: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(container.get("volumeMounts") or ())


def pod_volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(pod_spec(pod).get("volumes") or ())
