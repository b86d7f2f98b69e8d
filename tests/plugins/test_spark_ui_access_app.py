"""The plugin's app (plugins/spark_ui.py) with its Airflow reads replaced by plain data and
each connection's API server a scripted one on loopback (tests/kube/fakeapi.py): which
requests go where, with which connection, for an honest and a rewritten `spark_ui` XCom;
the refusals as the plugin's own messages; a gone driver's History Server fallback. The
same through a real api-server: tests/plugins/test_spark_ui_target.py."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from typing import Any

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient

from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
)
from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget
from airflow_provider_sparkk8s.application.ui.spark_ui_access import TaskDefinition
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.plugins import spark_ui as plugin
from tests.kube.fakeapi import FakeApiServer, Recorded, Reply

REF = TaskInstanceRef("etl", "pi", "manual__1", -1)
PAGE = "/sparkk8s/ui/etl/manual__1/pi/-1/api/v1/applications"
IDENTITY = "system:serviceaccount:platform:airflow"
LABELS = {TASK_INSTANCE_LABEL: REF.digest, "spark-role": "driver"}
SPARK_CSP = "default-src 'self'; script-src 'self' 'nonce-abc'; object-src 'none'"
KILL = "/sparkk8s/ui/etl/manual__1/pi/-1/jobs/job/kill/"


def pod(name: str, labels: Mapping[str, str], namespace: str = "jobs") -> dict[str, Any]:
    ports = [{"name": "spark-ui", "containerPort": 4041}]
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"containers": [{"name": "driver", "ports": ports}]},
    }


def task_kube(request: Recorded) -> Reply:
    name = request.path.removeprefix("/api/v1/namespaces/jobs/pods/")
    pods = {
        "pi-driver": pod("pi-driver", LABELS),
        "intruder": pod("intruder", {}),
        "noproxy-driver": pod("noproxy-driver", LABELS),
    }
    if name in pods:
        return Reply(200, pods[name])
    if name == "denied":
        return Reply.status_body(403, "Forbidden", f'User "{IDENTITY}" cannot get pods')
    if name.startswith("noproxy-driver:4041/proxy/"):
        return Reply.status_body(403, "Forbidden", f'User "{IDENTITY}" cannot get pods/proxy')
    if name == "pi-driver:4041/proxy/jobs/":
        protections = {"Content-Security-Policy": SPARK_CSP, "X-Frame-Options": "SAMEORIGIN"}
        cookie = {"Set-Cookie": "JSESSIONID=from-the-driver"}
        html = {"Content-Type": "text/html;charset=utf-8"}
        return Reply(200, b"<html>Spark Jobs</html>", {**html, **protections, **cookie})
    if name == "pi-driver:4041/proxy/api/v1/applications":
        return Reply(200, [{"id": "spark-1"}])
    return Reply.status_body(404, "NotFound", f'pods "{name}" not found')


class Plugin:
    def __init__(self, client: TestClient, servers: dict[str, FakeApiServer], app: FastAPI):
        self.client, self.servers, self.app = client, servers, app
        self.loaded: list[str] = []

    def hint(self, **value: Any) -> None:
        target: dict[str, Any] = {
            "conn_id": "task_conn",
            "namespace": "jobs",
            "driver_pod": "pi-driver",
        }
        target.update(value)
        hint = SparkUiTarget(**target)
        self.app.dependency_overrides[plugin.published_target] = lambda: hint

    def sent(self, conn_id: str) -> list[str]:
        return [r.path for r in self.servers[conn_id].requests]


@pytest.fixture
def ui() -> Iterator[Plugin]:
    with ExitStack() as stack:
        servers = {
            "task_conn": stack.enter_context(FakeApiServer(task_kube)),
            "other_conn": stack.enter_context(FakeApiServer(task_kube)),
        }
        app = plugin.build_app(read_check=lambda: None)
        root = FastAPI()
        root.mount("/sparkk8s", app)
        client = stack.enter_context(TestClient(root))
        fixture = Plugin(client, servers, app)

        def settings(conn_id: str) -> ClientSettings:
            fixture.loaded.append(conn_id)
            return ClientSettings(server=servers[conn_id].url, token=f"{conn_id}-token")

        definition = {"kubernetes_conn_id": "task_conn", "namespace": "jobs"}
        app.state.settings_for = settings
        app.state.definition_for = lambda *ids: TaskDefinition(definition)
        app.state.rendered_for = lambda *ids: None
        app.state.history_url_for = lambda conn_id: None
        app.state.application_id_for = lambda *ids: None
        fixture.hint()
        yield fixture


def test_the_tasks_driver_is_checked_then_proxied_on_its_own_ui_port(ui):
    response = ui.client.get(PAGE)
    assert response.status_code == 200, response.text
    assert response.json() == [{"id": "spark-1"}]
    assert ui.sent("task_conn") == [
        "/api/v1/namespaces/jobs/pods/pi-driver",
        "/api/v1/namespaces/jobs/pods/pi-driver:4041/proxy/api/v1/applications",
    ]
    # A page's next asset: the check is remembered for a while, no second GET of the pod.
    assert ui.client.get(PAGE).status_code == 200
    assert ui.sent("task_conn")[2:] == [
        "/api/v1/namespaces/jobs/pods/pi-driver:4041/proxy/api/v1/applications"
    ]


def test_an_xcom_naming_another_connection_namespace_and_pod_sends_nothing(ui):
    ui.hint(conn_id="other_conn", namespace="kube-system", driver_pod="etcd-0")
    response = ui.client.get(PAGE)
    assert response.status_code == 403, response.text
    assert "'other_conn'" in response.json()["detail"]
    assert ui.sent("other_conn") == [] and ui.sent("task_conn") == []
    assert "other_conn" not in ui.loaded  # its settings were not even read


def test_an_xcom_naming_another_namespace_sends_nothing(ui):
    ui.hint(namespace="kube-system")
    response = ui.client.get(PAGE)
    assert response.status_code == 403
    assert "'kube-system'" in response.json()["detail"] and ui.sent("task_conn") == []


def test_a_pod_without_the_labels_is_refused_after_its_get_alone(ui):
    ui.hint(driver_pod="intruder")
    response = ui.client.get(PAGE)
    assert response.status_code == 403
    assert TASK_INSTANCE_LABEL in response.json()["detail"]
    assert ui.sent("task_conn") == ["/api/v1/namespaces/jobs/pods/intruder"]


def test_a_refused_get_is_the_plugins_message_without_the_api_servers_body(ui):
    ui.hint(driver_pod="denied")
    response = ui.client.get(PAGE)
    assert response.status_code == 403
    assert "may not get pods in namespace 'jobs'" in response.json()["detail"]
    assert IDENTITY not in response.text


def test_a_refused_proxy_request_names_pods_proxy_without_the_api_servers_body(ui):
    ui.hint(driver_pod="noproxy-driver")
    response = ui.client.get(PAGE)
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert "'task_conn''s identity may not get pods/proxy in namespace 'jobs'" in detail
    assert IDENTITY not in response.text


def test_a_gone_driver_without_a_history_server_is_the_plugins_404(ui):
    ui.hint(driver_pod="gone-driver")
    response = ui.client.get(PAGE)
    assert response.status_code == 404
    assert "jobs/gone-driver is gone" in response.json()["detail"]
    assert ui.sent("task_conn") == ["/api/v1/namespaces/jobs/pods/gone-driver"]


def test_a_gone_driver_redirects_to_the_history_server_of_the_tasks_connection(ui):
    asked: list[str] = []
    ui.app.state.history_url_for = lambda conn_id: asked.append(conn_id) or "http://history"
    ui.app.state.application_id_for = lambda *ids: "spark-9"
    ui.hint(driver_pod="gone-driver")
    response = ui.client.get("/sparkk8s/ui/etl/manual__1/pi/-1/jobs/", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"].endswith("/pi/-1/history/spark-9/jobs/")
    assert asked == ["task_conn"]


def test_a_task_without_a_serialized_connection_is_refused(ui):
    ui.app.state.definition_for = lambda *ids: TaskDefinition({"namespace": "jobs"})
    response = ui.client.get(PAGE)
    assert response.status_code == 403
    assert "names no kubernetes_conn_id" in response.json()["detail"]
    assert ui.loaded == []


def test_sparks_csp_reaches_the_browser_and_its_cookie_does_not(ui):
    page = ui.client.get("/sparkk8s/ui/etl/manual__1/pi/-1/jobs/")
    assert page.status_code == 200, page.text
    assert page.headers["content-security-policy"] == SPARK_CSP
    assert page.headers["x-frame-options"] == "SAMEORIGIN"
    assert "set-cookie" not in page.headers


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_kill_is_refused_with_the_reason_before_anything_is_read_or_sent(ui, method):
    form = {"id": "0", "csrfToken": "token-from-the-page"}
    refused = ui.client.request(method, KILL, data=form)
    assert refused.status_code == 405, refused.text
    assert refused.headers["allow"] == "GET, HEAD"
    assert "read-only" in refused.json()["detail"], refused.text
    assert ui.sent("task_conn") == [] and ui.sent("other_conn") == []
    assert ui.loaded == []


def test_a_kill_from_a_user_who_may_not_read_is_refused_by_airflows_check_first(ui):
    def viewer_of_another_dag() -> None:
        raise HTTPException(403, "Forbidden")

    app = plugin.build_app(read_check=viewer_of_another_dag)
    root = FastAPI()
    root.mount("/sparkk8s", app)
    with TestClient(root) as client:
        refused = client.post(KILL, data={"id": "0", "csrfToken": "t"})
    assert refused.status_code == 403, refused.text


def test_a_kill_by_get_is_refused_and_sends_nothing(ui):
    refused = ui.client.get(KILL, params={"id": "0", "csrfToken": "token-from-the-page"})
    assert refused.status_code == 405 and "read-only" in refused.text, refused.text
    assert ui.sent("task_conn") == [] and ui.loaded == []
