"""The status read: the Connect tab over HTTP at the clients' host, the executors from a
pods reader; whatever fails becomes a line, never an error."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from airflow_provider_sparkk8s.errors import KubeConnectionError
from airflow_provider_sparkk8s.services.connect.status_read import read_connect_page, server_status

TAB = b"<h4>1 session(s) are online, running 0 Request(s)</h4><a>Session Statistics (1)</a>"


class _Tab(BaseHTTPRequestHandler):
    def do_GET(self):
        found = self.path == "/connect/"
        self.send_response(200 if found else 404)
        self.end_headers()
        self.wfile.write(TAB if found else b"no")

    def log_message(self, *args):
        pass


@pytest.fixture
def ui_port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Tab)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class Pods:
    def __init__(self, failing: bool = False):
        self.failing = failing
        self.selectors: list[tuple[str, str]] = []

    def list_pods(self, namespace, selector):
        self.selectors.append((namespace, selector))
        if self.failing:
            raise KubeConnectionError("the API server is out of reach")
        return [{"metadata": {"name": "srv-exec-1", "labels": {"spark-role": "executor"}},
                 "status": {"phase": "Running"}}]  # fmt: skip


def _driver(ui_port: int) -> dict:
    return {"spec": {"containers": [{"name": "spark-kubernetes-driver",
                                     "ports": [{"name": "spark-ui", "containerPort": ui_port}]}]}}  # fmt: skip


PUBLISHED = {"url": "sc://127.0.0.1:15002", "namespace": "ns", "application_id": "spark-1"}


def test_executors_and_sessions_of_a_serving_server(ui_port):
    pods = Pods()
    status = server_status(pods, PUBLISHED, _driver(ui_port))  # type: ignore[arg-type]
    assert pods.selectors == [("ns", "spark-app-selector=spark-1")]
    assert status.executors == "1 executor: srv-exec-1 (Running)"
    assert status.sessions.startswith("1 session(s) online; 0 request(s) running")


def test_an_unreachable_ui_or_api_becomes_a_line(ui_port):
    page, why = read_connect_page("127.0.0.1", ui_port + 1 if ui_port < 65535 else 1)
    assert page is None and "did not answer" in str(why)
    status = server_status(Pods(failing=True), PUBLISHED, None)  # type: ignore[arg-type]
    assert status.executors.startswith("executors unknown (listing the pods failed: ")
    assert status.sessions.startswith("sessions unknown (")
