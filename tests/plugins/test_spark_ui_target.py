"""The Spark UI link proxies only what the task itself submitted (issue 44), on a real
api-server: the task's `spark_k8s` connection comes from its serialized definition, never
from the `spark_ui` XCom. The task's connection points at a scripted API server on loopback
(tests/kube/fakeapi.py); another connection points at a loopback listener that counts every
TCP connection made to it. An XCom rewritten (as anyone who may edit XComs can) to that
other connection, another namespace and another pod is refused with the plugin's own 403,
and that connection is never used: its listener sees no connection at all."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
)
from tests.kube.fakeapi import FakeApiServer, Recorded, Reply
from tests.plugins.airflow_api import ApiServer, api_server, spark_task_rows

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

TASK_CONN, OTHER_CONN = "spark_k8s_task", "spark_k8s_other"
NAMESPACE = "jobs"
REF = TaskInstanceRef("etl", "pi", "manual__1", -1)
PAGE = "/sparkk8s/ui/etl/manual__1/pi/-1/api/v1/applications"
TASK_TOKEN = "task-token-123"
# What a real API server's 403 names: the platform's identity, never shown to the browser.
PLATFORM_IDENTITY = "system:serviceaccount:platform:airflow"


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "containers": [
                {"name": "driver", "ports": [{"name": "spark-ui", "containerPort": 4041}]}
            ]
        },
    }


DRIVER_LABELS = {TASK_INSTANCE_LABEL: REF.digest, "spark-role": "driver"}
PODS = {
    "pi-driver": _pod("pi-driver", DRIVER_LABELS),
    "intruder": _pod("intruder", {"spark-role": "driver"}),
    "noproxy-driver": _pod("noproxy-driver", DRIVER_LABELS),
}


def _kube(request: Recorded) -> Reply:
    """The task's API server: the pods above; `denied` refused; the UI of pi-driver."""
    prefix = f"/api/v1/namespaces/{NAMESPACE}/pods/"
    name = request.path.removeprefix(prefix)
    if name == "denied":
        message = f'pods "denied" is forbidden: User "{PLATFORM_IDENTITY}" cannot get resource'
        return Reply.status_body(403, "Forbidden", message)
    if name in PODS:
        return Reply(200, PODS[name])
    if name == "pi-driver:4041/proxy/api/v1/applications":
        return Reply(200, [{"id": "spark-123", "name": "pi"}])
    if name.startswith("noproxy-driver:4041/proxy/"):
        message = f'User "{PLATFORM_IDENTITY}" cannot get resource "pods/proxy"'
        return Reply.status_body(403, "Forbidden", message)
    return Reply.status_body(404, "NotFound", f"no {request.path}")


class CountingListener:
    """A loopback port that accepts and counts TCP connections, and answers nothing."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                accepted, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            accepted.close()

    def close(self) -> None:
        self._socket.close()


def _connection(server: str, token: str) -> str:
    extra = {"token": token, "namespace": NAMESPACE}
    return json.dumps({"conn_type": "spark_k8s", "host": server, "extra": extra})


@pytest.fixture(scope="module")
def plane(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ApiServer, FakeApiServer, CountingListener]]:
    home = tmp_path_factory.mktemp("spark-ui-target") / "home"
    listener = CountingListener()
    xcom = {"conn_id": TASK_CONN, "namespace": NAMESPACE, "driver_pod": "pi-driver", "port": 4040}
    with FakeApiServer(_kube) as kube:
        env = {
            f"AIRFLOW_CONN_{TASK_CONN.upper()}": _connection(kube.url, TASK_TOKEN),
            f"AIRFLOW_CONN_{OTHER_CONN.upper()}": _connection(
                f"http://127.0.0.1:{listener.port}", "other-token"
            ),
        }
        rows = spark_task_rows(home, TASK_CONN, NAMESPACE, xcom)
        try:
            with api_server(home, {"viewer": "viewer"}, env, rows=rows) as running:
                yield running, kube, listener
        finally:
            listener.close()


def _rewrite_xcom(server: ApiServer, **value: Any) -> None:
    xcom = {"conn_id": TASK_CONN, "namespace": NAMESPACE, "driver_pod": "pi-driver", "port": 4040}
    xcom.update(value)
    server.run_python(
        f"""
        from airflow.models.xcom import XComModel
        XComModel.set("spark_ui", {xcom!r}, dag_id="etl", task_id="pi", run_id="manual__1")
        """
    )


def _get(server: ApiServer) -> httpx.Response:
    token = server.token("viewer")
    return httpx.get(
        f"{server.base_url}{PAGE}", headers={"Authorization": f"Bearer {token}"}, timeout=60
    )


def test_the_tasks_own_driver_is_proxied_with_the_tasks_connection(plane):
    server, kube, listener = plane
    _rewrite_xcom(server)
    before = len(kube.requests)
    response = _get(server)
    assert response.status_code == 200, response.text
    assert response.json() == [{"id": "spark-123", "name": "pi"}]
    sent = kube.requests[before:]
    # The pod checked first, then its own UI port (4041, not the XCom's 4040).
    assert [r.path for r in sent] == [
        f"/api/v1/namespaces/{NAMESPACE}/pods/pi-driver",
        f"/api/v1/namespaces/{NAMESPACE}/pods/pi-driver:4041/proxy/api/v1/applications",
    ]
    assert all(r.headers["authorization"] == f"Bearer {TASK_TOKEN}" for r in sent)
    assert listener.connections == 0


def test_an_xcom_rewritten_to_another_connection_namespace_and_pod_is_refused(plane):
    """The acceptance test of issue 44: nothing is sent, with either connection."""
    server, kube, listener = plane
    _rewrite_xcom(server, conn_id=OTHER_CONN, namespace="kube-system", driver_pod="etcd-0")
    before = len(kube.requests)
    response = _get(server)
    assert response.status_code == 403, response.text
    detail = response.json()["detail"]
    assert OTHER_CONN in detail and TASK_CONN in detail and "nothing was sent" in detail
    assert listener.connections == 0  # the other connection's server never saw a connection
    assert kube.requests[before:] == []


def test_another_namespace_under_the_tasks_connection_is_refused_before_any_request(plane):
    server, kube, listener = plane
    _rewrite_xcom(server, namespace="kube-system")
    before = len(kube.requests)
    response = _get(server)
    assert response.status_code == 403, response.text
    assert "'kube-system'" in response.json()["detail"]
    assert kube.requests[before:] == [] and listener.connections == 0


def test_a_pod_without_the_task_instances_labels_is_not_proxied(plane):
    server, kube, _ = plane
    _rewrite_xcom(server, driver_pod="intruder")
    before = len(kube.requests)
    response = _get(server)
    assert response.status_code == 403, response.text
    assert TASK_INSTANCE_LABEL in response.json()["detail"]
    assert [r.path for r in kube.requests[before:]] == [
        f"/api/v1/namespaces/{NAMESPACE}/pods/intruder"
    ]


def test_the_api_servers_refusals_are_the_plugins_own_pages(plane):
    server, _, _ = plane
    _rewrite_xcom(server, driver_pod="denied")
    response = _get(server)
    assert response.status_code == 403, response.text
    detail = response.json()["detail"]
    assert "may not get pods in namespace 'jobs'" in detail and TASK_CONN in detail
    assert PLATFORM_IDENTITY not in response.text

    _rewrite_xcom(server, driver_pod="noproxy-driver")
    response = _get(server)
    assert response.status_code == 403, response.text
    assert "may not get pods/proxy in namespace 'jobs'" in response.json()["detail"]
    assert PLATFORM_IDENTITY not in response.text
