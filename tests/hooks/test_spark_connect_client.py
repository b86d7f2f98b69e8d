"""The client helper's bearer header (the real server refuses and accepts it in
tests/runtime/test_connect_server_runtime.py)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

pytest.importorskip("grpc")

from airflow_provider_sparkk8s.hooks.spark_connect_client import _bearer_interceptor, token_of


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
