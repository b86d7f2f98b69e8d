"""The metrics sink on Airflow's own StatsD client (whichever Airflow runs the tests: the
compatibility suite runs this on 3.0 too), read back as the datagrams it sends."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.application.metrics import NO_METRICS
from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics
from tests.support.statsd import fresh_stats, point_airflow_at


@pytest.fixture
def udp() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(10)
        yield sock


def received(sock: socket.socket, name: str) -> str:
    """The first datagram for `name` (Airflow may send its own metrics in between)."""
    while True:
        datagram = sock.recv(65536).decode()
        if datagram.startswith((f"airflow.{name},", f"airflow.{name}:")):
            return datagram


def test_without_metrics_in_the_config_the_sink_is_the_null_one(monkeypatch):
    for key in ("STATSD_ON", "STATSD_DATADOG_ENABLED", "OTEL_ON"):
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", "False")
    fresh_stats(monkeypatch)
    try:
        assert airflow_metrics() is NO_METRICS
    finally:
        airflow_metrics.cache_clear()


def test_the_sink_sends_through_airflows_statsd_client_with_influxdb_tags(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    try:
        sink = airflow_metrics()
        assert sink.enabled
        tags = {"namespace": "team-a", "dag_id": "etl", "task_id": "spark"}
        sink.timing("sparkk8s.driver.time_to_running", 1.5, tags)
        sink.incr("sparkk8s.driver.pending", 1, {**tags, "reason": "Unschedulable"})
        sink.gauge("sparkk8s.store.applications", 7, {"namespace": "team-a", "state": "running"})
        assert received(udp, "sparkk8s.driver.time_to_running") == (
            "airflow.sparkk8s.driver.time_to_running,namespace=team-a,dag_id=etl,task_id=spark"
            ":1500.000000|ms"
        )
        assert received(udp, "sparkk8s.driver.pending") == (
            "airflow.sparkk8s.driver.pending,namespace=team-a,dag_id=etl,task_id=spark,"
            "reason=Unschedulable:1|c"
        )
        assert received(udp, "sparkk8s.store.applications") == (
            "airflow.sparkk8s.store.applications,namespace=team-a,state=running:7|g"
        )
    finally:
        airflow_metrics.cache_clear()


def test_a_backend_that_raises_drops_the_metric_and_never_the_caller():
    from airflow_provider_sparkk8s.hooks.airflow_stats import AirflowStatsSink

    tried: list[str] = []

    class Broken:
        def incr(self, name: str, *args: object, **kwargs: object) -> None:
            tried.append(name)
            raise RuntimeError("statsd host unresolvable")

        gauge = timing = incr

    sink = AirflowStatsSink(Broken())
    sink.incr("sparkk8s.driver.pending", 1, {"namespace": "ns"})
    sink.gauge("sparkk8s.store.applications", 1, {"namespace": "ns"})
    sink.timing("sparkk8s.application.duration", 1.0, {"namespace": "ns"})
    assert tried == [
        "sparkk8s.driver.pending",
        "sparkk8s.store.applications",
        "sparkk8s.application.duration",
    ]
