"""Driver pods, read and changed through one sync service: the operator, sensor and CLI use it.

It lists, gets, deletes, tails logs, reads a driver's spark.properties, kills by
`namespace:pod` globs like `spark-submit --kill`, and waits by watch (the generic
list-then-watch layers of `kube.watch_sync`). Every path is built by `resource_path`, which
refuses names that would change the URL's meaning. Submitting is not here: the submission
service (`services.submission`) sends through `services.send`.

The deferred trigger does not come here: its shared `SnapshotStore` follows every deferred
application of a namespace with one watch.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Self

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.ownership import (
    KILL_ATTEMPTS,
    Delete,
    Spare,
    claim_patch,
    kill_decision,
)
from airflow_provider_sparkk8s.errors import KubeApiError, SparkK8sError
from airflow_provider_sparkk8s.kube.listwatch import (
    Gone,
    Listed,
    StreamEnded,
    WatchCursor,
    WatchSpec,
    WatchStats,
    note_gone,
)
from airflow_provider_sparkk8s.kube.paths import FIELD_MANAGER, apply_params, resource_path
from airflow_provider_sparkk8s.kube.request import APPLY_PATCH
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.kube.watch_sync import list_objects, list_then_watch, watch_stream
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView, view_of
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.submission import kueue
from airflow_provider_sparkk8s.submission.arguments import load_java_properties
from airflow_provider_sparkk8s.submission.properties import CONF_VOLUME, PROPERTIES_FILE
from airflow_provider_sparkk8s.submission.request_body import json_body

log = logging.getLogger(__name__)
# Workloads whose read failed, each warned of once (a slow cadence repeats the failure).
_WARNED_WORKLOADS: set[tuple[str, str]] = set()
_WARNED_MAX = 10_000

DRIVER_ROLE_SELECTOR = "spark-role=driver"
WATCH_SECONDS = 30  # a watch window: the server ends it, and we resume from there
MIN_WINDOW_SECONDS = 3
CATCH_UP_SECONDS = 1  # one catch-up stream: the server replays what it holds at once
_GLOB = "*?["


def application_selector(application_id: str) -> str:
    """Every pod of one application, driver and executors (Spark's own label)."""
    return f"spark-app-selector={application_id}"


def conf_map_path(pod: Pod) -> str | None:
    """The path of the conf ConfigMap a driver pod mounts (its spark.properties); None when
    it mounts none."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    conf_map = next((v["configMap"]["name"] for v in volumes if v.get("name") == CONF_VOLUME), None)
    if conf_map is None:
        return None
    return resource_path("v1", "ConfigMap", str(objects.namespace(pod)), conf_map)


def properties_of(config_map: Mapping[str, Any]) -> dict[str, str]:
    """The spark.properties a conf ConfigMap holds, as a dict."""
    return load_java_properties((config_map.get("data") or {}).get(PROPERTIES_FILE, ""))


def workload_path(namespace: str, name: str) -> str:
    return resource_path(kueue.API_VERSION, kueue.KIND, namespace, name)


def local_queue_path(namespace: str, name: str) -> str:
    return resource_path(kueue.API_VERSION, kueue.LOCAL_QUEUE_KIND, namespace, name)


def cluster_queue_of_local(local_queue: Mapping[str, Any]) -> str | None:
    name = (local_queue.get("spec") or {}).get("clusterQueue")
    return name if isinstance(name, str) and name else None


def split_submission_id(submission_id: str, default_namespace: str) -> tuple[str, str]:
    """`ns:pod` -> (ns, pod); no `:` means the client's default namespace (as Spark)."""
    namespace, sep, pattern = submission_id.partition(":")
    if not sep:
        return default_namespace, submission_id
    return namespace or default_namespace, pattern


class Look(NamedTuple):
    """What `DriverPods.follow` yields: the pods as they are now, and, on a deletion, the
    deleted pod's last version, which may be the first to show how it ended (a kubelet's
    final status and the removal can come as one change); the poller's catch-up replays it
    as a version too, so every follower counts that pod the same way."""

    pods: tuple[Pod, ...]
    gone: tuple[Pod, ...] = ()


@dataclass
class FollowedPods:
    """Where `DriverPods.catch_up` left off for one selector, and the pods as of there."""

    namespace: str
    label_selector: str
    cursor: WatchCursor = field(default_factory=WatchCursor)
    pods: dict[str, Pod] = field(default_factory=dict)
    stats: WatchStats = field(default_factory=WatchStats)


class DriverPods:
    """Driver pods through one sync client; closes the client if it made it.

    :param client: the client to send through.
    :param owns_client: close `client` on `close()` (and on leaving a `with` block).
    """

    def __init__(self, client: KubeClient, *, owns_client: bool = False) -> None:
        self.client = client
        self._owns_client = owns_client

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ read and delete

    def list_pods(self, namespace: str, label_selector: str) -> list[Pod]:
        listing = self.client.request(
            "GET", resource_path("v1", "Pod", namespace), params={"labelSelector": label_selector}
        )
        return [pod for pod in listing.get("items") or [] if isinstance(pod, Mapping)]

    def get(self, namespace: str, name: str) -> Pod | None:
        """The pod, or None when there is none of that name."""
        return self._get_or_none("Pod", namespace, name)

    def _get_or_none(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.client.request("GET", resource_path("v1", kind, namespace, name))
        except KubeApiError as error:
            if error.status == 404:
                return None
            raise

    def delete(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        """Delete the pod (owner references take its objects); False when it was gone."""
        params = (
            {} if grace_period_seconds is None else {"gracePeriodSeconds": grace_period_seconds}
        )
        try:
            deleted = self.client.request(
                "DELETE", resource_path("v1", "Pod", namespace, name), params=params
            )
        except KubeApiError as error:
            if error.status != 404:
                raise
            return False
        workload = kueue.workload_of(deleted) if isinstance(deleted, dict) else None
        if workload is not None:
            try:
                self.client.request(
                    "DELETE", resource_path(kueue.API_VERSION, kueue.KIND, *workload)
                )
            except KubeApiError as error:
                if error.status != 404:
                    raise
        return True

    # ------------------------------------------------------------------ result records

    def result_record(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A succeeded application's result record (`application.delivery`), or None."""
        return self._get_or_none("ConfigMap", namespace, name)

    def keep_result(self, record: Mapping[str, Any]) -> None:
        """Write the record (server-side apply: a rerun of the same try overwrites it)."""
        metadata = record["metadata"]
        self.client.request(
            "PATCH",
            resource_path("v1", "ConfigMap", metadata["namespace"], metadata["name"]),
            params=apply_params(FIELD_MANAGER, force=True),
            content=json_body(record),
            content_type=APPLY_PATCH,
        )

    def drop_result(self, namespace: str, name: str) -> bool:
        """Delete the record (its result delivered, or superseded); False when it was gone."""
        try:
            self.client.request("DELETE", resource_path("v1", "ConfigMap", namespace, name))
        except KubeApiError as error:
            if error.status != 404:
                raise
            return False
        return True

    # ------------------------------------------------------------------ ownership between tries

    def claim(self, pod: Pod, try_number: int) -> Pod | None:
        """Mark `pod` adopted by `try_number` (`ownership.claim_patch`); the pod as patched,
        or None when it changed since it was read (409) or is gone: decide again. A 403
        (a Role without `patch` on pods) raises."""
        path = resource_path("v1", "Pod", str(objects.namespace(pod)), str(objects.name(pod)))
        try:
            return self.client.request(
                "PATCH",
                path,
                json=claim_patch(pod, try_number),
                content_type="application/merge-patch+json",
            )
        except KubeApiError as error:
            if error.status in (404, 409):
                return None
            raise

    def delete_if_owned(self, namespace: str, name: str, try_number: int | None) -> Spare | None:
        """A kill's delete: only while try `try_number` owns the pod, with its uid and
        resourceVersion as preconditions (`ownership.kill_decision`). None: deleted; else
        why not."""
        for _ in range(KILL_ATTEMPTS):
            decision = kill_decision(self.get(namespace, name), try_number)
            if isinstance(decision, Spare):
                return decision
            if self._delete_with(namespace, name, decision):
                return None
        return Spare(f"it kept changing between {KILL_ATTEMPTS} reads and deletes")

    def _delete_with(self, namespace: str, name: str, decision: Delete) -> bool:
        """False when a precondition no longer held (409) or the pod went (404): read again."""
        try:
            self.client.request(
                "DELETE", resource_path("v1", "Pod", namespace, name), json=decision.body
            )
        except KubeApiError as error:
            if error.status in (404, 409):
                return False
            raise
        return True

    def wait_gone(self, namespace: str, names: Sequence[str], timeout: float) -> list[str]:
        """Wait until none of the pods exists; the names still there after `timeout`."""
        deadline = time.monotonic() + timeout
        left = list(names)
        while left:
            left = [name for name in left if self.get(namespace, name) is not None]
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(1)  # deletion takes the driver's grace period: seconds, not a stream
        return left

    def driver_properties(self, pod: Pod) -> dict[str, str] | None:
        """The driver's spark.properties, read from the conf ConfigMap its pod mounts; None
        when it mounts none. A failed read raises (KubeApiError)."""
        path = conf_map_path(pod)
        if path is None:
            return None
        return properties_of(self.client.request("GET", path))

    def log_tail(self, namespace: str, name: str, container: str, lines: int) -> str:
        """The last `lines` lines of a container's log."""
        path = resource_path("v1", "Pod", namespace, name, "log")
        return self.client.text(path, {"container": container, "tailLines": str(lines)})

    # ------------------------------------------------------------------ spark-submit --kill

    def find(self, submission_id: str, default_namespace: str) -> list[Pod]:
        """Driver pods matching `ns:pod`, where pod may hold shell-style globs (`*`, `?`)."""
        namespace, pattern = split_submission_id(submission_id, default_namespace)
        if not any(char in pattern for char in _GLOB):
            pod = self.get(namespace, pattern)
            return [] if pod is None else [pod]
        return [
            pod
            for pod in self.list_pods(namespace, DRIVER_ROLE_SELECTOR)
            if fnmatch.fnmatchcase((pod.get("metadata") or {}).get("name", ""), pattern)
        ]

    def kill(
        self, submission_id: str, default_namespace: str, grace_period_seconds: int | None = None
    ) -> list[str]:
        """Delete the matching driver pods; the `ns:pod` ids of those deleted."""
        killed = []
        for pod in self.find(submission_id, default_namespace):
            metadata = pod["metadata"]
            if self.delete(metadata["namespace"], metadata["name"], grace_period_seconds):
                killed.append(f"{metadata['namespace']}:{metadata['name']}")
        return killed

    # ------------------------------------------------------------------ Kueue

    def queue_view(
        self, namespace: str, workload: str, cluster_queue: str | None
    ) -> QueueView | None:
        """The application's Workload as the follower reads it (`note_queue`), with its
        ClusterQueue: `cluster_queue` when known, else its LocalQueue's (one more read).
        None when it cannot be read now (no permission, a failing server): following goes
        on with what it last knew."""
        try:
            found = self.client.request("GET", workload_path(namespace, workload))
        except SparkK8sError as error:
            return workload_unread(namespace, workload, cluster_queue, error)
        if cluster_queue is None and (queue := (found.get("spec") or {}).get("queueName")):
            try:
                local = self.client.request("GET", local_queue_path(namespace, str(queue)))
                cluster_queue = cluster_queue_of_local(local)
            except SparkK8sError as error:  # the view names the LocalQueue instead
                local_queue_unread(namespace, str(queue), error)
        return view_of(found, cluster_queue)

    # ------------------------------------------------------------------ waiting

    def follow(
        self,
        namespace: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        window_seconds: int = WATCH_SECONDS,
    ) -> Iterator[Look]:
        """The matching pods after a list, after every change, and after every watch window;
        a deletion's look also carries the pod's last version (`Look.gone`).

        Layer 2 of `kube.watch_sync` (a list, then streams resumed from the last
        resourceVersion seen; it returns on `410 Gone` and this loop lists again). Not its
        endless layer 1: a failure reaches the caller (the task fails, or retries) instead of
        a reconnect, and a caller that waits with deadlines reads its clock at least every
        `window_seconds`, when a stream ends. Stopping the iteration closes the stream.
        """
        selector = {"labelSelector": label_selector, "fieldSelector": field_selector}
        spec = WatchSpec(
            resource_path("v1", "Pod", namespace),
            {key: value for key, value in selector.items() if value},
            # A stream the server ends sooner than a second is taken for a failure, and
            # each stream asks for 80-100% of this: three seconds keep it above that.
            timeout_seconds=max(window_seconds, MIN_WINDOW_SECONDS),
        )
        stats = WatchStats()
        pods: dict[str, Pod] = {}
        while True:  # a 410 returns from layer 2: list again
            for item in list_then_watch(self.client, spec, WatchCursor(), stats):
                gone: tuple[Pod, ...] = ()
                if isinstance(item, Listed):
                    pods = {_name(pod): pod for pod in item.items}
                elif not isinstance(item, StreamEnded):
                    changed = _apply(pods, item)
                    if changed is None:
                        continue  # a bookmark
                    gone = (changed,) if item.get("type") == "DELETED" else ()
                yield Look(tuple(pods.values()), gone)

    def catch_up(self, followed: FollowedPods) -> list[Pod]:
        """Every version of the followed pods since the previous call, oldest first (a list's
        pods the first time and after `410 Gone`); `followed.pods` as they are now.

        For a poller (the sensor's poke mode): a list per poll misses the versions between
        polls (Spark deletes a failed executor's pod at once, so how it ended is never
        listed), and one short watch from the previous call's resourceVersion replays them
        all, as the trigger's watch sees them. The server replays what its watch cache still
        holds (minutes); older than that is a `410`, and then a list.
        """
        spec = WatchSpec(
            resource_path("v1", "Pod", followed.namespace),
            {"labelSelector": followed.label_selector},
            timeout_seconds=CATCH_UP_SECONDS,
        )
        versions: list[Pod] = []
        while True:  # a 410 lists again
            listing = followed.cursor.resource_version is None
            if listing:
                listed = list_objects(self.client, spec, followed.stats)
                followed.cursor.resource_version = listed.resource_version
                followed.pods = {_name(pod): pod for pod in listed.items}
                versions += listed.items
            try:
                for event in watch_stream(self.client, spec, followed.cursor.resource_version):
                    followed.stats.events += 1
                    followed.cursor.advance(event)
                    changed = _apply(followed.pods, event)
                    if changed is not None:
                        versions.append(changed)
                return versions
            except Gone:
                if listing:
                    raise  # too old right after a list: listing again would loop
                note_gone(spec, followed.cursor, followed.stats)

    def watch_driver(
        self, namespace: str, name: str, window_seconds: int = WATCH_SECONDS
    ) -> Iterator[Pod | None]:
        """One driver pod as it changes; None once it is gone (and then the end)."""
        for pods, _ in self.follow(
            namespace, field_selector=f"metadata.name={name}", window_seconds=window_seconds
        ):
            if not pods:
                yield None
                return
            yield pods[0]


def _apply(pods: dict[str, Pod], event: Mapping[str, Any]) -> Pod | None:
    """One watch event applied to `pods` by name: the pod it carries, None for a bookmark."""
    kind, obj = event.get("type"), event.get("object") or {}
    if kind == "BOOKMARK":
        return None
    if kind == "DELETED":
        pods.pop(_name(obj), None)
    else:
        pods[_name(obj)] = obj
    return obj


def _name(pod: Mapping[str, Any]) -> str:
    return objects.name(pod) or ""


def local_queue_unread(namespace: str, queue: str, error: SparkK8sError) -> None:
    """A LocalQueue that cannot be read (a 403: the Role lacks `get` on localqueues) leaves
    the queued message naming the LocalQueue, not its ClusterQueue; said once per queue."""
    _warn_once(
        (namespace, f"localqueue/{queue}"),
        "Cannot read Kueue's LocalQueue %s/%s (%s); the driver's queue is reported by its "
        "LocalQueue, without its ClusterQueue",
        namespace,
        queue,
        error,
    )


def _warn_once(key: tuple[str, str], message: str, *args: object) -> None:
    if key not in _WARNED_WORKLOADS and len(_WARNED_WORKLOADS) < _WARNED_MAX:
        _WARNED_WORKLOADS.add(key)
        log.warning(message, *args)


def workload_unread(
    namespace: str, workload: str, cluster_queue: str | None, error: SparkK8sError
) -> QueueView | None:
    """What a failed Workload read gives the follower: a 404 means Kueue made none (yet);
    anything else (403, a failing server, an exec plugin's credential failure) leaves the
    follow with what it last knew, and says so once per Workload: a 403 means the Role
    lacks `get` on workloads (docs/rbac.yaml), so the queued message cannot say more."""
    if isinstance(error, KubeApiError) and error.status == 404:
        return view_of(None, cluster_queue)
    _warn_once(
        (namespace, workload),
        "Cannot read Kueue's Workload %s/%s (%s); the driver's queue is reported without "
        "its ClusterQueue's reason until it can be read",
        namespace,
        workload,
        error,
    )
    return None
