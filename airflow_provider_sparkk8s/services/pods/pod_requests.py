"""Every pod operation written once, as requests: the sync and async pods services only send.

Lightkube's split: what a request is (method, path, query, body, and which answers mean
"not there") is a `PodCall`, plain data; an operation of more than one request (a delete
and its Kueue Workload, a kill's read-then-delete, a Workload and its LocalQueue) is a
generator that yields each call and is sent back its answer. `DriverPods.run` (sync, over
`KubeClient`) and `AsyncPods.run` (async, over `AsyncKubeClient`) are the two senders; a
failed call is thrown back into the operation, so an operation handles an error where it
reads the answer, as ordinary code would.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Generator, Mapping
from typing import Any, Generic, TypeVar

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.ownership import (
    KILL_ATTEMPTS,
    Delete,
    Spare,
    claim_patch,
    kill_decision,
)
from airflow_provider_sparkk8s.errors import KubeApiError, SparkK8sError
from airflow_provider_sparkk8s.kube.paths import FIELD_MANAGER, apply_params, resource_path
from airflow_provider_sparkk8s.kube.request import APPLY_PATCH, MERGE_PATCH
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView, view_of
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import kueue
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from airflow_provider_sparkk8s.submission.properties import CONF_VOLUME, PROPERTIES_FILE
from airflow_provider_sparkk8s.submission.request_body import json_body

log = logging.getLogger(__name__)
# Workloads whose read failed, each warned of once (a slow cadence repeats the failure).
_WARNED_WORKLOADS: set[tuple[str, str]] = set()
_WARNED_MAX = 10_000

_T = TypeVar("_T")


class Absent(enum.Enum):
    """The answer to a call whose status said the object is not there (or changed)."""

    ABSENT = "absent"


ABSENT = Absent.ABSENT
NOT_FOUND = frozenset({404})
CHANGED_OR_GONE = frozenset({404, 409})  # 409: a precondition or a conflict; read again


@record
class PodCall:
    """One request as plain data, and which statuses answer `ABSENT` instead of raising."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    content: bytes | str | None = None
    content_type: str | None = None
    absent: frozenset[int] = frozenset()
    text: bool = False  # a plain-text resource (pods/log): the client's `text`, GET only

    def keywords(self) -> dict[str, Any]:
        """The client's `request` keywords this call sets (a client that knows only
        `params` serves the calls that set nothing else)."""
        given = {
            "params": self.params,
            "json": self.json,
            "content": self.content,
            "content_type": self.content_type,
        }
        return {key: value for key, value in given.items() if value is not None}

    def absent_on(self, error: Exception) -> bool:
        return isinstance(error, KubeApiError) and error.status in self.absent


# An operation: yields calls, is sent each answer (or `ABSENT`), returns its result.
Operation = Generator[PodCall, Any, _T]


class Exchange(Generic[_T]):
    """One operation between a sender and the server: the sender asks `next_call`, sends
    it, and hands back what came (`answered`, `failed`) until `next_call` is None; then
    `result` holds the operation's result. An error is thrown into the operation where it
    made the call (`ABSENT` instead, for a status the call names)."""

    def __init__(self, operation: Operation[_T]) -> None:
        self._operation = operation
        self._call: PodCall | None = None
        self._answer: Any = None
        self._error: Exception | None = None
        self.result: _T

    def next_call(self) -> PodCall | None:
        error, self._error = self._error, None
        try:
            if error is not None:
                self._call = self._operation.throw(error)
            else:
                self._call = self._operation.send(self._answer)
        except StopIteration as done:
            self.result = done.value
            return None
        return self._call

    def answered(self, answer: Any) -> None:
        self._answer = answer

    def failed(self, error: Exception) -> None:
        if self._call is not None and self._call.absent_on(error):
            self._answer = ABSENT
        else:
            self._error = error


# ------------------------------------------------------------------ paths and readings


def pod_path(namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    return resource_path("v1", "Pod", namespace, name, subresource)


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


# ------------------------------------------------------------------ one request each


def list_pods(namespace: str, label_selector: str) -> Operation[list[Pod]]:
    listing = yield PodCall("GET", pod_path(namespace), params={"labelSelector": label_selector})
    return [pod for pod in listing.get("items") or [] if isinstance(pod, Mapping)]


def get_object(kind: str, namespace: str, name: str) -> Operation[dict[str, Any] | None]:
    """The object, or None when there is none of that name."""
    found = yield PodCall("GET", resource_path("v1", kind, namespace, name), absent=NOT_FOUND)
    return None if found is ABSENT else found


def get_pod(namespace: str, name: str) -> Operation[Pod | None]:
    return (yield from get_object("Pod", namespace, name))


def keep_result(record: Mapping[str, Any]) -> Operation[None]:
    """Write the record (server-side apply: a rerun of the same try overwrites it)."""
    metadata = record["metadata"]
    yield PodCall(
        "PATCH",
        resource_path("v1", "ConfigMap", metadata["namespace"], metadata["name"]),
        params=apply_params(FIELD_MANAGER, force=True),
        content=json_body(record),
        content_type=APPLY_PATCH,
    )


def drop_result(namespace: str, name: str) -> Operation[bool]:
    """Delete the record; False when it was gone."""
    path = resource_path("v1", "ConfigMap", namespace, name)
    return (yield PodCall("DELETE", path, absent=NOT_FOUND)) is not ABSENT


def claim(pod: Pod, try_number: int) -> Operation[Pod | None]:
    """Mark `pod` adopted by `try_number` (`ownership.claim_patch`); the pod as patched, or
    None when it changed since it was read (409) or is gone."""
    path = pod_path(str(objects.namespace(pod)), str(objects.name(pod)))
    patch = claim_patch(pod, try_number)
    patched = yield PodCall(
        "PATCH", path, json=patch, content_type=MERGE_PATCH, absent=CHANGED_OR_GONE
    )
    return None if patched is ABSENT else patched


def driver_properties(pod: Pod) -> Operation[dict[str, str] | None]:
    """The driver's spark.properties, read from the conf ConfigMap its pod mounts; None
    when it mounts none. A failed read raises (KubeApiError)."""
    path = conf_map_path(pod)
    if path is None:
        return None
    return properties_of((yield PodCall("GET", path)))


def log_text(namespace: str, name: str, params: Mapping[str, Any]) -> Operation[str]:
    """A container's log as text; `params` are `pods/log`'s (container, tailLines, ...)."""
    return (yield PodCall("GET", pod_path(namespace, name, "log"), params=params, text=True))


# ------------------------------------------------------------------ more than one request


def delete_pod(
    namespace: str, name: str, grace_period_seconds: int | None = None
) -> Operation[bool]:
    """Delete the pod (owner references take its objects); False when it was gone. A driver
    admitted by Kueue: its Workload goes with it (submission/kueue.py)."""
    grace = None if grace_period_seconds is None else {"gracePeriodSeconds": grace_period_seconds}
    deleted = yield PodCall("DELETE", pod_path(namespace, name), params=grace, absent=NOT_FOUND)
    if deleted is ABSENT:
        return False
    workload = kueue.workload_of(deleted) if isinstance(deleted, dict) else None
    if workload is not None:
        path = resource_path(kueue.API_VERSION, kueue.KIND, *workload)
        yield PodCall("DELETE", path, absent=NOT_FOUND)
    return True


def delete_if_owned(namespace: str, name: str, try_number: int | None) -> Operation[Spare | None]:
    """A kill's delete: only while try `try_number` owns the pod, with its uid and
    resourceVersion as preconditions (`ownership.kill_decision`). None: deleted; else why
    not."""
    for _ in range(KILL_ATTEMPTS):
        decision = kill_decision((yield from get_pod(namespace, name)), try_number)
        if isinstance(decision, Spare):
            return decision
        if (yield delete_with(namespace, name, decision)) is not ABSENT:
            return None
    return Spare(f"it kept changing between {KILL_ATTEMPTS} reads and deletes")


def delete_with(namespace: str, name: str, decision: Delete) -> PodCall:
    """`ABSENT` when a precondition no longer held (409) or the pod went (404): read again."""
    return PodCall("DELETE", pod_path(namespace, name), json=decision.body, absent=CHANGED_OR_GONE)


def queue_view(
    namespace: str, workload: str, cluster_queue: str | None
) -> Operation[QueueView | None]:
    """The application's Workload as the follower reads it (`note_queue`), with its
    ClusterQueue: `cluster_queue` when known, else its LocalQueue's (one more read). None
    when it cannot be read now (no permission, a failing server): following goes on with
    what it last knew."""
    try:
        found = yield PodCall("GET", workload_path(namespace, workload))
    except SparkK8sError as error:
        return workload_unread(namespace, workload, cluster_queue, error)
    if cluster_queue is None and (queue := (found.get("spec") or {}).get("queueName")):
        try:
            local = yield PodCall("GET", local_queue_path(namespace, str(queue)))
            cluster_queue = cluster_queue_of_local(local)
        except SparkK8sError as error:  # the view names the LocalQueue instead
            local_queue_unread(namespace, str(queue), error)
    return view_of(found, cluster_queue)


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
