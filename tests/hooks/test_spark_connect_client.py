"""The client helper's bearer header (the real server refuses and accepts it in
tests/runtime/test_connect_server_runtime.py)."""

from __future__ import annotations

import socket
from typing import Any, NamedTuple

import pytest

pytest.importorskip("grpc")

from airflow_provider_sparkk8s.errors import ConnectServerUnavailable
from airflow_provider_sparkk8s.hooks.spark_connect_client import (
    _bearer_interceptor,
    check_server,
    token_of,
)


class Details(NamedTuple):  # grpc's ClientCallDetails is a namedtuple of these fields
    method: str
    timeout: Any
    metadata: Any
    credentials: Any
    wait_for_ready: Any
    compression: Any


def test_every_call_kind_carries_the_bearer_token_and_keeps_its_metadata():
    interceptor = _bearer_interceptor("t0k")
    seen = []

    def continuation(details, request):
        seen.append((details.metadata, request))
        return "answer"

    details = Details("/spark.connect.SparkConnectService/Config", None, [("x-a", "1")], None,
                      None, None)  # fmt: skip
    for method in ("intercept_unary_unary", "intercept_unary_stream",
                   "intercept_stream_unary", "intercept_stream_stream"):  # fmt: skip
        assert getattr(interceptor, method)(continuation, details, "req") == "answer"
    assert seen == [([("x-a", "1"), ("authorization", "Bearer t0k")], "req")] * 4


def test_no_connection_no_token():
    assert token_of({"url": "sc://h:15002", "token_conn_id": None}) is None


def test_the_token_comes_from_the_connection_password(monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_CONNECT_TOKEN", '{"conn_type": "spark_connect", "password": "pw"}'
    )
    assert token_of({"token_conn_id": "connect_token"}) == "pw"


class Pods:
    def __init__(self, pod):
        self.pod = pod

    def get(self, namespace, name):
        assert (namespace, name) == ("ns", "srv-driver")
        return self.pod


PUBLISHED = {"url": "sc://h:1", "namespace": "ns", "driver_pod": "srv-driver"}


def test_a_gone_or_failed_server_fails_the_client_with_the_pod_and_why():
    with pytest.raises(ConnectServerUnavailable, match=r"ns:srv-driver .* gone"):
        check_server({**PUBLISHED, "port": 15002}, Pods(None))
    failed = {
        "metadata": {"name": "srv-driver"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "spark-kubernetes-driver",
                    "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                }
            ],
        },
    }
    with pytest.raises(ConnectServerUnavailable, match="OOMKilled, exit code 137"):
        check_server({**PUBLISHED, "port": 15002}, Pods(failed))


def test_a_running_server_whose_port_answers_passes():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        running = {"metadata": {"name": "srv-driver"},
                   "status": {"phase": "Running", "podIP": "127.0.0.1"}}  # fmt: skip
        check_server({**PUBLISHED, "port": port}, Pods(running))
    with pytest.raises(ConnectServerUnavailable, match="does not answer"):
        check_server({**PUBLISHED, "port": port}, Pods(running))  # closed now
