"""Pods on the test control plane, as plain dicts: manifests that pick a KWOK
behaviour (docs/testing.md), reads, waits, and writing the status
subresource the way a kubelet does."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from testenv.harness.kube import request

Pod = dict[str, Any]

RUN_MS = "kwok.sparkk8s.io/run-ms"
EXIT_CODE = "kwok.sparkk8s.io/exit-code"
REASON = "kwok.sparkk8s.io/reason"
MESSAGE = "kwok.sparkk8s.io/message"
HOLD = "kwok.sparkk8s.io/hold"
MANUAL = "kwok.sparkk8s.io/manual"  # KWOK leaves the status to the test

# KWOK's pull failures (testenv/kwok-stages.yaml), each with the real node's messages: an i/o
# timeout reaching the registry (transient: waits for the startup timeout), and the
# registry's "not found" (definitive: the follower ends the application at once).
UNPULLABLE_IMAGE = "registry.invalid/sparkk8s/pull-timeout:1"
MISSING_IMAGE = "registry.invalid/sparkk8s/does-not-exist:1"


def pod_manifest(
    name: str,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    image: str = "apache/spark:4.0.1",
    node_selector: dict[str, str] | None = None,
    container_names: tuple[str, ...] = ("spark-kubernetes-driver",),
    owner: Pod | None = None,
) -> Pod:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": container, "image": image} for container in container_names],
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    metadata: dict[str, Any] = {
        "name": name,
        "annotations": dict(annotations or {}),
        "labels": dict(labels or {}),
    }
    if owner is not None:
        metadata["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def new_app_id() -> str:
    return "spark-" + uuid.uuid4().hex


def spark_pod(
    name: str,
    app_id: str,
    role: str = "driver",
    annotations: dict[str, str] | None = None,
    **manifest: Any,
) -> Pod:
    """A pod labelled as Spark labels a driver or an executor of `app_id`."""
    container = "spark-kubernetes-driver" if role == "driver" else "spark-kubernetes-executor"
    labels = {"spark-app-selector": app_id, "spark-role": role}
    return pod_manifest(name, annotations, labels, container_names=(container,), **manifest)


def owner_reference(owner: Pod) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }


def create(api: ApiClient, namespace: str, obj: Pod, plural: str = "pods") -> Pod:
    """POSTs a core/v1 object (pods, configmaps, ...) and returns it as the server stored it."""
    return dict(request(api, "POST", f"/api/v1/namespaces/{namespace}/{plural}", obj))


def get_pod(api: ApiClient, namespace: str, name: str) -> Pod | None:
    try:
        return dict(request(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}"))
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def set_pod_status(api: ApiClient, namespace: str, name: str, status: dict[str, Any]) -> Pod:
    """Writes `status` through the status subresource with a strategic merge
    patch, as the kubelet does (conditions merge by type; container statuses
    are replaced whole)."""
    return dict(
        request(
            api,
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"status": status},
            content_type="application/strategic-merge-patch+json",
        )
    )


def wait_for_pod(
    api: ApiClient,
    namespace: str,
    name: str,
    predicate: Callable[[Pod], bool],
    timeout: float = 30.0,
    message: str = "pod condition",
) -> Pod:
    """Polls the pod until `predicate(pod)` holds; the failure shows the last status seen."""
    deadline = time.monotonic() + timeout
    interval = 0.05
    pod: Pod | None = None
    while True:
        pod = get_pod(api, namespace, name)
        if pod is not None and predicate(pod):
            return pod
        if time.monotonic() >= deadline:
            last = pod.get("status") if pod else "pod not found"
            raise AssertionError(
                f"timed out after {timeout}s waiting for {namespace}/{name}: {message}; "
                f"last status: {json.dumps(last, indent=1)}"
            )
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)


def wait_for_pod_gone(api: ApiClient, namespace: str, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while get_pod(api, namespace, name) is not None:
        if time.monotonic() >= deadline:
            raise AssertionError(f"{namespace}/{name} still exists after {timeout}s")
        time.sleep(0.1)


def phase(pod: Pod) -> str | None:
    return pod.get("status", {}).get("phase")


def condition(pod: Pod, condition_type: str) -> dict[str, Any] | None:
    for entry in pod.get("status", {}).get("conditions") or []:
        if entry.get("type") == condition_type:
            return dict(entry)
    return None


def container_state(pod: Pod, container: str) -> dict[str, Any]:
    """The `state` of one container status ({"running": ...}, {"terminated": ...}, ...)."""
    for entry in pod.get("status", {}).get("containerStatuses") or []:
        if entry.get("name") == container:
            return dict(entry.get("state") or {})
    return {}


def running_status(container_names: tuple[str, ...], started_at: str) -> dict[str, Any]:
    """A kubelet-shaped Running status, for set_pod_status."""
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {
                "name": container,
                "image": "kwok",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": started_at}},
            }
            for container in container_names
        ],
    }


def terminated_status(
    container_names: tuple[str, ...],
    exit_code: int,
    reason: str,
    finished_at: str,
    message: str | None = None,
) -> dict[str, Any]:
    """A kubelet-shaped terminal status (Succeeded for exit 0, else Failed)."""
    terminated: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": finished_at,
        "finishedAt": finished_at,
    }
    if message is not None:
        terminated["message"] = message
    return {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted"}],
        "containerStatuses": [
            {
                "name": container,
                "image": "kwok",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"terminated": terminated},
            }
            for container in container_names
        ],
    }
