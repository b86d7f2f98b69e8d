"""Driver pods, read and changed through one sync service: the operator, sensor and CLI use it.

It lists, gets, deletes, tails logs, reads a driver's spark.properties, kills by
`namespace:pod` globs like `spark-submit --kill`, and waits by watch (the generic
list-then-watch layers of `kube.watch_sync`). What each request is, and what its answer
means, is written once in `pod_requests`, for this service and the async one
(`async_pods`): `DriverPods.run` only sends. Every path is built by `resource_path`, which
refuses names that would change the URL's meaning. Submitting is not here: the submission
service (`services.submit.submission`) sends through `services.submit.send`.

The deferred trigger does not come here: its shared `SnapshotStore` follows every deferred
application of a namespace with one watch.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Self, TypeVar

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.ownership import Spare
from airflow_provider_sparkk8s.kube.listwatch import (
    Gone,
    Listed,
    StreamEnded,
    WatchCursor,
    WatchSpec,
    WatchStats,
    note_gone,
)
from airflow_provider_sparkk8s.kube.paths import resource_path
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.kube.watch_sync import list_objects, list_then_watch, watch_stream
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.services.pods import pod_requests as requests
from airflow_provider_sparkk8s.services.pods.pod_requests import Exchange, Operation, PodCall

_T = TypeVar("_T")

DRIVER_ROLE_SELECTOR = "spark-role=driver"
WATCH_SECONDS = 30  # a watch window: the server ends it, and we resume from there
MIN_WINDOW_SECONDS = 3
CATCH_UP_SECONDS = 1  # one catch-up stream: the server replays what it holds at once
_GLOB = "*?["


def application_selector(application_id: str) -> str:
    """Every pod of one application, driver and executors (Spark's own label)."""
    return f"spark-app-selector={application_id}"


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

    # ------------------------------------------------------------------ the sender

    def run(self, operation: Operation[_T]) -> _T:
        """Send the operation's calls (`pod_requests`), one by one; its result."""
        exchange = Exchange(operation)
        while (call := exchange.next_call()) is not None:
            try:
                exchange.answered(self._send(call))
            except Exception as error:  # noqa: BLE001 - thrown back into the operation
                exchange.failed(error)
        return exchange.result

    def _send(self, call: PodCall) -> Any:
        if call.text:
            return self.client.text(call.path, call.params)
        return self.client.request(call.method, call.path, **call.keywords())

    # ------------------------------------------------------------------ read and delete

    def list_pods(self, namespace: str, label_selector: str) -> list[Pod]:
        return self.run(requests.list_pods(namespace, label_selector))

    def get(self, namespace: str, name: str) -> Pod | None:
        """The pod, or None when there is none of that name."""
        return self.run(requests.get_pod(namespace, name))

    def delete(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        """Delete the pod (owner references take its objects); False when it was gone."""
        return self.run(requests.delete_pod(namespace, name, grace_period_seconds))

    # ------------------------------------------------------------------ result records

    def result_record(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A succeeded application's result record (`application.task.delivery`), or None."""
        return self.run(requests.get_object("ConfigMap", namespace, name))

    def keep_result(self, record: Mapping[str, Any]) -> None:
        """Write the record (server-side apply: a rerun of the same try overwrites it)."""
        self.run(requests.keep_result(record))

    def drop_result(self, namespace: str, name: str) -> bool:
        """Delete the record (its result delivered, or superseded); False when it was gone."""
        return self.run(requests.drop_result(namespace, name))

    # ------------------------------------------------------------------ ownership between tries

    def claim(self, pod: Pod, try_number: int) -> Pod | None:
        """Mark `pod` adopted by `try_number` (`ownership.claim_patch`); the pod as patched,
        or None when it changed since it was read (409) or is gone: decide again. A 403
        (a Role without `patch` on pods) raises."""
        return self.run(requests.claim(pod, try_number))

    def delete_if_owned(self, namespace: str, name: str, try_number: int | None) -> Spare | None:
        """A kill's delete: only while try `try_number` owns the pod, with its uid and
        resourceVersion as preconditions (`ownership.kill_decision`). None: deleted; else
        why not."""
        return self.run(requests.delete_if_owned(namespace, name, try_number))

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
        return self.run(requests.driver_properties(pod))

    def log_tail(self, namespace: str, name: str, container: str, lines: int) -> str:
        """The last `lines` lines of a container's log."""
        params = {"container": container, "tailLines": str(lines)}
        return self.run(requests.log_text(namespace, name, params))

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
        return self.run(requests.queue_view(namespace, workload, cluster_queue))

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
