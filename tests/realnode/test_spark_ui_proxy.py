"""The Spark UI plugin's proxy against the real API server and the real node: kube-apiserver
really proxies to a pod IP (10.244.0.x; it refuses loopback), through the plugin's FastAPI
app (a TestClient: the app in-process, everything under it real) with a real `spark_k8s`
connection. The pod is a small HTTP server that answers as Spark's UI does under
`spark.ui.proxyBase`: pages whose links carry the base, a redirect to the bare path, a
static file, the REST API, a large streamed body. Airflow's auth is tested on a real
api-server in tests/plugins/test_spark_ui_auth.py; here it is let through."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
)
from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget, TaskInstanceUi
from airflow_provider_sparkk8s.application.ui.spark_ui_access import TaskDefinition
from airflow_provider_sparkk8s.plugins import spark_ui as plugin
from testenv.controlplane import ControlPlane, free_port
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import REAL_SPARK_TIMINGS
from testenv.realnode.node import RealNode
from testenv.runtime_image import image_name

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(400)]

UI = TaskInstanceUi("etl", "manual__2026-12-02T01:00:00+00:00", "pi", -1)
BASE = UI.base
REF = TaskInstanceRef(UI.dag_id, UI.task_id, UI.run_id, UI.map_index)
DRIVER_LABELS = {TASK_INSTANCE_LABEL: REF.digest, "spark-role": "driver"}
BIG = 3 * 1024 * 1024

# Spark's UI, as far as a proxy can tell: links under the base, redirects to the bare path.
SERVER = r"""
import json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BASE = os.environ["BASE"]
PAGE = ('<html><head><link rel="stylesheet" href="%s/static/app.css"/>'
        "<script>setUIRoot('%s')</script></head><body>"
        '<a href="%s/stages/">Stages</a><a href="/environment/">bare</a></body></html>'
        % (BASE, BASE, BASE)).encode()
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, status, kind, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Set-Cookie", "JSESSIONID=from-the-driver")
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    def do_HEAD(self):
        self.do_GET()
    def do_GET(self):
        if self.path == "/":
            # Jetty's sendRedirect: absolute, to the Host the request named (the pod).
            where = "http://%s/jobs/" % self.headers["Host"]
            return self.answer(302, "text/plain", b"", [("Location", where)])
        if self.path == "/jobs/":
            return self.answer(200, "text/html;charset=utf-8", PAGE)
        if self.path == "/static/app.css":
            return self.answer(200, "text/css", b"body { color: #e25a1c; }\n")
        if self.path == "/api/v1/applications":
            body = json.dumps([{"id": "spark-123", "name": "pi"}]).encode()
            return self.answer(200, "application/json", body)
        if self.path == "/headers":
            return self.answer(200, "application/json", json.dumps(dict(self.headers)).encode())
        if self.path == "/big":
            return self.answer(200, "application/octet-stream", b"x" * int(os.environ["BIG"]))
        self.answer(404, "text/plain", b"no such page")
ThreadingHTTPServer(("0.0.0.0", 4040), Handler).serve_forever()
"""


def _ui_pod(base: str) -> dict:
    return {
        # The task instance's identity, as the operator labels its drivers: the plugin
        # proxies only to such a pod (application/ui/spark_ui_access.py).
        "metadata": {"name": "ui-driver", "labels": DRIVER_LABELS},
        "spec": {
            "nodeName": "real-node-0",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "spark-kubernetes-driver",
                    "image": f"docker.io/{image_name()}",
                    "imagePullPolicy": "Never",
                    "command": ["/usr/bin/python3", "-c", SERVER],
                    "env": [{"name": "BASE", "value": base}, {"name": "BIG", "value": str(BIG)}],
                    "ports": [{"name": "spark-ui", "containerPort": 4040}],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ],
        },
    }


@contextmanager
def plugin_client(
    plane: ControlPlane,
    ns: str,
    monkeypatch: pytest.MonkeyPatch,
    history: tuple[str, str] | None = None,
) -> Iterator[TestClient]:
    """The plugin's app mounted as the api-server mounts it, its auth let through, its
    target the pod `ui-driver`, through a real `spark_k8s` connection (here the plane's
    admin; docs/spark_ui.md: the api-server's connection needs `get` on pods/proxy). With
    `history` (a History Server's URL, the application's id), its fallback has both."""
    extra = {"kube_config_path": str(plane.admin_kubeconfig), "namespace": ns}
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_UI_TEST", json.dumps({"conn_type": "spark_k8s", "extra": extra})
    )
    target = SparkUiTarget("spark_ui_test", ns, "ui-driver", 4040)
    app = plugin.build_app(read_check=lambda: None)
    app.dependency_overrides[plugin.published_target] = lambda: target
    # The task's definition in the serialized DAG (tests/plugins: a real one).
    definition = TaskDefinition({"kubernetes_conn_id": "spark_ui_test", "namespace": ns})
    app.state.definition_for = lambda *ids: definition
    if history is not None:
        url, app_id = history
        app.state.history_url_for = lambda conn_id: url
        app.state.application_id_for = lambda *ids: app_id
    root = FastAPI()
    root.mount("/sparkk8s", app)
    with TestClient(root) as client:
        yield client


@pytest.fixture
def ui_client(
    real_plane: ControlPlane,
    real_namespace: str,
    real_admin: ApiClient,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TestClient]:
    ns = real_namespace
    started = time.monotonic()
    kube.request(real_admin, "POST", f"/api/v1/namespaces/{ns}/pods", _ui_pod(BASE))
    try:
        with plugin_client(real_plane, ns, monkeypatch) as client:

            def serving() -> bool | None:
                response = client.get(BASE + "/api/v1/applications")
                return True if response.status_code == 200 else None

            wait_for(serving, 180, "the UI pod to answer through the pod proxy")
            REAL_SPARK_TIMINGS["real node, UI proxy: pod create -> first page"] = (
                time.monotonic() - started
            )
            yield client
    finally:
        _delete_and_wait(real_admin, ns)


def _delete_and_wait(api: ApiClient, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    items = kube.request(api, "GET", pods)["items"]
    if any(not pod["metadata"].get("deletionTimestamp") for pod in items):
        kube.request(api, "DELETE", f"{pods}/ui-driver")
    wait_for(lambda: not kube.request(api, "GET", pods)["items"] or None, 60, "ui-driver gone")


def test_the_ui_comes_through_the_api_servers_pod_proxy_with_links_redirects_and_files(
    ui_client: TestClient, real_namespace: str
):
    client = ui_client
    # The redirect to the bare path, which the API server prefixed, lands under the base.
    root = client.get(BASE + "/", follow_redirects=False)
    assert root.status_code == 302, root.text
    assert root.headers["location"] == BASE + "/jobs/"

    page = client.get(BASE + "/")  # followed, as the browser does
    assert page.status_code == 200 and page.url.raw_path.decode() == BASE + "/jobs/"
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert f'href="{BASE}/static/app.css"' in html, html
    assert f'href="{BASE}/stages/"' in html, html
    assert f'href="{BASE}/environment/"' in html, html  # a bare link, prefixed by the API server
    assert f"setUIRoot('{BASE}')" in html, html
    assert "/api/v1/namespaces/" not in html, html
    assert "set-cookie" not in page.headers  # a driver sets no cookie on Airflow's origin

    css = client.get(BASE + "/static/app.css")
    assert css.status_code == 200 and css.text == "body { color: #e25a1c; }\n"
    assert css.headers["content-type"] == "text/css"
    api = client.get(BASE + "/api/v1/applications")
    assert api.json() == [{"id": "spark-123", "name": "pi"}]
    missing = client.get(BASE + "/nothing/")
    assert missing.status_code == 404 and missing.text == "no such page"

    head = client.head(BASE + "/jobs/")
    assert head.status_code == 200 and head.content == b""

    with client.stream("GET", BASE + "/big") as big:
        sizes = [len(chunk) for chunk in big.iter_raw()]
    assert sum(sizes) == BIG


def test_airflows_cookie_and_token_never_reach_the_driver(ui_client: TestClient):
    sent = ui_client.get(
        BASE + "/headers",
        cookies={"_token": "airflow-session-secret"},
        headers={"Authorization": "Bearer airflow-api-secret", "Accept-Language": "fr"},
    )
    assert sent.status_code == 200, sent.text
    received = {name.lower(): value for name, value in sent.json().items()}
    assert "airflow-session-secret" not in sent.text and "airflow-api-secret" not in sent.text
    assert "cookie" not in received
    assert received["accept-language"] == "fr"


def test_a_gone_driver_answers_a_clear_status_to_get_and_head_not_a_crash(
    ui_client: TestClient,
    real_plane: ControlPlane,
    real_admin: ApiClient,
    real_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
):
    ns = real_namespace
    kube.request(real_admin, "DELETE", f"/api/v1/namespaces/{ns}/pods/ui-driver")

    def deleted() -> Any:
        response = ui_client.get(BASE + "/jobs/")
        assert response.status_code != 500, response.text
        return response if response.status_code == 404 else None  # 503 while it terminates

    # No History Server configured: the plugin's own 404 says what is gone and why.
    answer = wait_for(deleted, 90, "the proxy to answer 404 for the deleted pod")
    detail = answer.json()["detail"]
    assert f"driver pod {ns}/ui-driver is gone" in detail, detail
    assert "history_server_url" in detail, detail
    # A HEAD has no body to judge by: asked again as a GET, it answers the same status.
    head = ui_client.head(BASE + "/jobs/")
    assert head.status_code == 404 and head.content == b"", head
    head = ui_client.head(BASE + "/api/v1/applications")
    assert head.status_code == 404 and head.content == b"", head

    # With a History Server configured (nothing listens there: nothing leaves loopback),
    # a HEAD of a page redirects as a GET does, and the server's own path is a 502.
    nowhere = f"http://127.0.0.1:{free_port()}"
    with plugin_client(real_plane, ns, monkeypatch, (nowhere, "spark-123")) as client:
        for method in ("GET", "HEAD"):
            moved = client.request(method, BASE + "/jobs/", follow_redirects=False)
            assert moved.status_code == 302, (method, moved.text)
            assert moved.headers["location"] == BASE + "/history/spark-123/jobs/"
            unreachable = client.request(method, BASE + "/history/spark-123/jobs/")
            assert unreachable.status_code == 502, (method, unreachable.text)
        assert "did not answer" in client.get(BASE + "/api/v1/applications").json()["detail"]


# A real Spark driver (4.3.0, local mode in one pod: the UI is the driver's whatever the
# cluster manager) that keeps its UI up; spark-submit sets the conf as system properties,
# where Spark's UI reads spark.ui.proxyBase, as in a cluster-mode driver pod.
SPARK_APP = """
import time
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
print("counted", spark.range(1000).count(), flush=True)
time.sleep(900)
"""
SPARK_COMMAND = (
    'printf "%s" "$APP" > /tmp/ui_app.py && exec /opt/spark/bin/spark-submit --master "local[1]" '
    '--driver-memory 512m --conf spark.ui.proxyBase="$BASE" /tmp/ui_app.py'
)


def _spark_pod(base: str, image: str) -> dict:
    pod = _ui_pod(base)
    container = pod["spec"]["containers"][0]
    container["image"] = image  # the node's name for it (docker.io/...)
    container["command"] = ["/bin/sh", "-c", SPARK_COMMAND]
    container["env"] = [{"name": "BASE", "value": base}, {"name": "APP", "value": SPARK_APP}]
    container["resources"] = {"requests": {"cpu": "200m", "memory": "600Mi"}}
    return pod


def _median_seconds(get: Any, path: str, times: int = 9) -> float:
    took = []
    for _ in range(times):
        started = time.perf_counter()
        assert get(path).status_code == 200
        took.append(time.perf_counter() - started)
    return sorted(took)[times // 2]


# The oldest line and the newest: each reads spark.ui.proxyBase (docs/spark_ui.md).
@pytest.mark.parametrize("version", ["3.5.9", "4.3.0"])
def test_a_real_spark_drivers_ui_through_the_plugin(
    version: str,
    real_node: RealNode,
    real_plane: ControlPlane,
    real_namespace: str,
    real_admin: ApiClient,
    monkeypatch: pytest.MonkeyPatch,
):
    ns = real_namespace
    started = time.monotonic()
    image = real_node.ensure_spark_image(version)  # imported in the background, or now
    kube.request(real_admin, "POST", f"/api/v1/namespaces/{ns}/pods", _spark_pod(BASE, image))
    target = SparkUiTarget("spark_ui_test", ns, "ui-driver", 4040)
    try:
        with plugin_client(real_plane, ns, monkeypatch) as client:
            answers: list[tuple[int, str, bytes]] = []

            def listed() -> Any:
                # While Spark starts, its UI may answer before its REST API is mounted.
                response = client.get(BASE + "/api/v1/applications")
                kind = response.headers.get("content-type", "")
                answers.append((response.status_code, kind, response.content[:300]))
                ready = response.status_code == 200 and kind.startswith("application/json")
                return (response.json() or None) if ready else None

            try:
                (application,) = wait_for(listed, 300, "the Spark driver's REST API")
            finally:
                print("answers while Spark started:", sorted(set(answers))[-5:])
            REAL_SPARK_TIMINGS[f"real node, Spark UI {version}: pod create -> REST API"] = (
                time.monotonic() - started
            )
            assert application["name"] == "ui_app.py", application

            redirect = client.get(BASE + "/", follow_redirects=False)
            assert redirect.status_code == 302, redirect.text
            assert redirect.headers["location"] == BASE + "/jobs/"
            jobs = client.get(BASE + "/jobs/")
            assert jobs.status_code == 200, jobs.text
            html = jobs.text
            assert "Spark Jobs" in html, html[:2000]
            assert f'href="{BASE}/static/webui.css"' in html, html[:3000]
            assert f'href="{BASE}/environment/"' in html, html[:3000]
            assert f"setUIRoot('{BASE}')" in html
            assert "/api/v1/namespaces/" not in html
            if version == "4.3.0":  # Spark's CSP (HttpSecurityFilter) reaches the client
                csp = jobs.headers.get("content-security-policy", "")
                assert "default-src 'self'" in csp and "object-src 'none'" in csp, jobs.headers
                nonce = re.search(r"'nonce-([^']+)'", csp)
                assert nonce and f'nonce="{nonce.group(1)}"' in html, (csp, html[:3000])
                assert "set-cookie" not in jobs.headers
            # A state-changing request is the plugin's refusal, never the driver's business.
            kill = client.post(BASE + "/jobs/job/kill/", data={"id": "0", "csrfToken": "x"})
            assert kill.status_code == 405 and "read-only" in kill.text, kill.text
            css = client.get(BASE + "/static/webui.css")
            assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
            assert len(css.content) > 1000
            executors = client.get(f"{BASE}/api/v1/applications/{application['id']}/executors")
            assert [e["id"] for e in executors.json()] == ["driver"], executors.text

            # The application's one job (count) runs and the REST API lists it.
            def job_statuses() -> Any:
                answer = client.get(f"{BASE}/api/v1/applications/{application['id']}/jobs")
                statuses = [job["status"] for job in answer.json()]
                return statuses if statuses and "RUNNING" not in statuses else None

            assert wait_for(job_statuses, 120, "the count job to end") == ["SUCCEEDED"]

            # What the plugin adds to the API server's own proxy (printed, not asserted).
            with kube.session(real_admin) as direct:
                upstream = target.upstream_prefix + "/api/v1/applications"
                through_api_server = _median_seconds(direct.get, upstream)
                through_plugin = _median_seconds(client.get, BASE + "/api/v1/applications")
            REAL_SPARK_TIMINGS[f"Spark UI {version} REST median: API server's proxy alone (ms)"] = (
                through_api_server * 1000
            )
            REAL_SPARK_TIMINGS[f"Spark UI {version} REST median: through the plugin (ms)"] = (
                through_plugin * 1000
            )
    finally:
        _delete_and_wait(real_admin, ns)
