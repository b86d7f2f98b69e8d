"""In-memory stand-ins for the operator's shell: a tiny pod API, a hook and a task instance.

Only for the flow logic (which request comes when); everything that talks to Kubernetes is
also tested against the real API server in tests/operators/test_operator_controlplane.py.
benchmarks/bench_connect.py borrows the task instance.
"""

from __future__ import annotations

import copy
import json as _json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_sparkk8s.errors import KubeApiError


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


@dataclass
class FakeCluster:
    """Pods by (namespace, name); records every request as (method, path)."""

    pods: dict[tuple[str, str], dict] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    applied: list[dict] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    # Called on every pod list: lets a test move pods through their phases.
    on_list: Callable[[FakeCluster], None] | None = None
    before_create: Callable[[FakeCluster, dict], None] | None = None
    clock: int = 0

    def add_pod(self, pod: dict) -> dict:
        pod = copy.deepcopy(pod)
        metadata = pod.setdefault("metadata", {})
        self.clock += 1
        metadata.setdefault("uid", f"uid-{self.clock}")
        metadata.setdefault("creationTimestamp", f"2026-11-29T18:00:{self.clock:02d}Z")
        pod.setdefault("status", {"phase": "Pending"})
        self.pods[(metadata["namespace"], metadata["name"])] = pod
        return pod

    def set_status(self, name: str, status: dict) -> None:
        for (_, pod_name), pod in self.pods.items():
            if pod_name == name:
                pod["status"] = status


class FakeClient:
    def __init__(self, cluster: FakeCluster):
        self.cluster = cluster
        self.settings = type("Settings", (), {"server": "https://127.0.0.1:6443"})()
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def text(self, path: str, params: dict | None = None) -> str:
        self.cluster.requests.append(("GET", path))
        name = path.split("/")[-2]
        if name not in self.cluster.logs:
            raise KubeApiError(404, "NotFound", "no log", method="GET", path=path)
        return self.cluster.logs[name]

    def watch(
        self, path: str, params: dict | None = None, *, read_timeout: float | None = None
    ) -> Iterator[dict]:
        """A short watch window: the cluster moves on (as on a list), and every pod of the
        namespace and selector that changed meanwhile comes as an event."""
        cluster = self.cluster
        cluster.requests.append(("WATCH", path))
        namespace = path.strip("/").split("/")[3]
        selector = (params or {}).get("labelSelector", "")

        def selected() -> dict[str, dict]:
            return {
                name: copy.deepcopy(p)
                for (ns, name), p in cluster.pods.items()
                if ns == namespace and _matches(p["metadata"].get("labels") or {}, selector)
            }

        before = selected()
        time.sleep(0.005)  # a window passes; another thread may kill or delete meanwhile
        if cluster.on_list:
            cluster.on_list(cluster)
        after = selected()
        for name, pod in after.items():
            if before.get(name) != pod:
                yield {"type": "ADDED" if name not in before else "MODIFIED", "object": pod}
        for name, pod in before.items():
            if name not in after:
                yield {"type": "DELETED", "object": pod}
        # As the API server's bookmarks: a window is never empty, so it never looks cut off.
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(cluster.clock)}}}

    def request(
        self, method: str, path: str, *, params=None, json=None, content=None, content_type=None
    ):
        cluster = self.cluster
        cluster.requests.append((method, path))
        parts = path.strip("/").split("/")  # api v1 namespaces <ns> <plural> [<name>]
        namespace, plural = parts[3], parts[4]
        name = parts[5] if len(parts) > 5 else ""  # "": the collection
        if plural != "pods":
            if method == "GET":  # what was applied there (an adopting operator reads it)
                applied = [a for a in cluster.applied if a["path"] == path and a["content"]]
                return _json.loads(applied[-1]["content"]) if applied else {}
            cluster.applied.append({"method": method, "path": path, "content": content})
            return {}
        if method == "GET" and not name:
            if cluster.on_list:
                cluster.on_list(cluster)
            selector = (params or {}).get("labelSelector", "")
            items = [
                copy.deepcopy(p)
                for (ns, _), p in cluster.pods.items()
                if ns == namespace and _matches(p["metadata"].get("labels") or {}, selector)
            ]
            return {"items": items}
        if method == "GET":
            if (namespace, name) not in cluster.pods:
                raise KubeApiError(404, "NotFound", "not found", method=method, path=path)
            return copy.deepcopy(cluster.pods[(namespace, name)])
        if method == "POST":
            if json is None and content is not None:  # the body as bytes, as submit sends it
                json = _json.loads(content)
            if cluster.before_create:
                cluster.before_create(cluster, json)
            pod_name = json["metadata"]["name"]
            if (namespace, pod_name) in cluster.pods:
                raise KubeApiError(409, "AlreadyExists", "exists", method=method, path=path)
            created = cluster.add_pod(
                {**json, "metadata": {**json["metadata"], "namespace": namespace}}
            )
            return copy.deepcopy(created)
        if method == "PATCH":  # an adoption's mark: merge the annotations
            pod = cluster.pods.get((namespace, name))
            if pod is None:
                raise KubeApiError(404, "NotFound", "not found", method=method, path=path)
            annotations = pod["metadata"].setdefault("annotations", {})
            annotations.update(json["metadata"].get("annotations") or {})
            return copy.deepcopy(pod)
        if method == "DELETE":
            if cluster.pods.pop((namespace, name), None) is None:
                raise KubeApiError(404, "NotFound", "not found", method=method, path=path)
            return {}
        raise AssertionError(f"unexpected {method} {path}")


class FakeConnection:
    def __init__(self, extra: dict | None = None):
        self.extra_dejson = extra or {}


class FakeHook:
    def __init__(self, cluster: FakeCluster, namespace: str = "team-a", extra: dict | None = None):
        self.cluster = cluster
        self.namespace = namespace
        self.extra = extra or {}
        self.clients: list[FakeClient] = []

    def get_client(self) -> FakeClient:
        client = FakeClient(self.cluster)
        self.clients.append(client)
        return client

    def get_namespace(self) -> str:
        return self.namespace

    def get_connection(self, conn_id: str) -> FakeConnection:
        return FakeConnection(self.extra)


class FakeTaskInstance:
    def __init__(
        self, dag_id="etl", task_id="spark_pi", run_id="manual__1", map_index=-1, try_number=1
    ):
        self.dag_id = dag_id
        self.task_id = task_id
        self.run_id = run_id
        self.map_index = map_index
        self.try_number = try_number
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = copy.deepcopy(value)

    def xcom_pull(self, task_ids=None, key="return_value", map_indexes=None) -> Any:
        return copy.deepcopy(self.xcom.get(key))


def driver_status(
    state: str, exit_code: int = 0, reason: str | None = None, message: str | None = None
) -> dict:
    """A driver pod's status in one of the reducer's states."""
    container = "spark-kubernetes-driver"
    if state == "running":
        return {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {"name": container, "state": {"running": {"startedAt": "2026-11-29T18:00:05Z"}}}
            ],
        }
    if state == "finished":
        terminated = {
            "exitCode": exit_code,
            "reason": reason or ("Completed" if exit_code == 0 else "Error"),
            "finishedAt": "2026-11-29T18:00:31Z",
        }
        if message:
            terminated["message"] = message
        return {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": container, "state": {"terminated": terminated}}],
        }
    if state == "unschedulable":
        return {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": (
                        "0/3 nodes are available: "
                        "3 node(s) didn't match Pod's node affinity/selector."
                    ),
                }
            ],
        }
    if state == "image_missing":  # containerd's answer when the registry has no such tag
        ref = "docker.io/apache/spark:3.5.99"
        answer = (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
            f'failed to resolve reference "{ref}": {ref}: not found'
        )
        return {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {
                    "name": container,
                    "image": "apache/spark:3.5.99",
                    "state": {"waiting": {"reason": "ErrImagePull", "message": answer}},
                }
            ],
        }
    if state == "image_pull":
        return {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {
                    "name": container,
                    "state": {
                        "waiting": {
                            "reason": "ImagePullBackOff",
                            "message": "Back-off pulling image",
                        }
                    },
                }
            ],
        }
    raise ValueError(state)
