"""Prometheus' statsd_exporter on loopback (testenv/statsd_exporter.py), and Airflow's
`[metrics]` pointed at it as a deployment would configure it. Import the fixtures:

    from tests.support.statsd import airflow_statsd, statsd_exporter  # noqa: F401
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics
from testenv.statsd_exporter import StatsdExporter

STATSD_PREFIX = "airflow"


@pytest.fixture(scope="module")
def statsd_exporter() -> Iterator[StatsdExporter]:
    with StatsdExporter() as exporter:
        yield exporter


@pytest.fixture
def airflow_statsd(
    monkeypatch: pytest.MonkeyPatch, statsd_exporter: StatsdExporter
) -> Iterator[StatsdExporter]:
    """`[metrics]` as a deployment's airflow.cfg would say it (StatsD on, InfluxDB-style
    tags), in a process that has not set up Stats yet: the trigger runner, where the
    provider's shim initialises the SDK's Stats from this config (version_compat.stats)."""
    for key, value in {
        "STATSD_ON": "True",
        "STATSD_HOST": "127.0.0.1",
        "STATSD_PORT": str(statsd_exporter.udp_port),
        "STATSD_PREFIX": STATSD_PREFIX,
        "STATSD_INFLUXDB_ENABLED": "True",
    }.items():
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
    backend = sys.modules.get("airflow.sdk._shared.observability.metrics.stats")
    if backend is not None:  # 3.2+: module-level state, as a fresh process has it
        monkeypatch.setattr(backend, "_factory", None)
        monkeypatch.setattr(backend, "_backend", None)
    airflow_metrics.cache_clear()
    try:
        yield statsd_exporter
    finally:
        airflow_metrics.cache_clear()
