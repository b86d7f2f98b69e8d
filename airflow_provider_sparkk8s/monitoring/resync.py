"""The periodic resync as pure functions: a list of versions, and which pods to fetch whole.

The resync only repairs what the watch missed, which is almost always nothing. So it lists
metadata only (`kube.request.METADATA_LIST`): each pod's key and resourceVersion, under a
quarter of the client's CPU per pod of a whole list (no spec, no status, nothing to slim)
and half the server's bytes. A pod whose listed version differs from what the store holds is
fetched whole, one GET each; when more than a few differ, one whole list is cheaper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.monitoring.snapshot import PodKey, Snapshot, is_newer, pod_key
from airflow_provider_sparkk8s.records import record


class ListedVersion(NamedTuple):
    """What a metadata-only list says of one pod."""

    key: PodKey
    name: str
    version: str | None


def listed_version(item: Mapping[str, Any]) -> ListedVersion:
    """The item view of a metadata-only list (a whole pod's metadata serves as well)."""
    return ListedVersion(pod_key(item), objects.name(item) or "", objects.resource_version(item))


@record
class ResyncPlan:
    """`kept`: the store's own objects for pods the list shows unchanged (or older than the
    store's); `fetch`: the pods to GET whole before the list can be applied."""

    kept: tuple[Pod, ...]
    fetch: tuple[ListedVersion, ...]


def resync_plan(snapshot: Snapshot, listed: Iterable[ListedVersion]) -> ResyncPlan:
    """What the store must fetch before a versions list can be applied as a whole list."""
    kept: list[Pod] = []
    fetch: list[ListedVersion] = []
    for item in listed:
        held = snapshot.pods.get(item.key)
        if held is not None and _current(objects.resource_version(held), item.version):
            kept.append(held)
            continue
        tombstone = snapshot.tombstones.get(item.key)
        if tombstone is not None and not is_newer(item.version, tombstone):
            continue  # deleted after this version: `apply_list` keeps it deleted
        fetch.append(item)
    return ResyncPlan(tuple(kept), tuple(fetch))


def _current(held: str | None, listed: str | None) -> bool:
    """The held pod is the listed version or a newer one (the watch ran ahead of the list).
    Versions that are not numbers, or missing, are only ever equal or not (`is_newer`)."""
    return held == listed or not is_newer(listed, held)
