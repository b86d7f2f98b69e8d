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


def point_airflow_at(monkeypatch: pytest.MonkeyPatch, udp_port: int) -> None:
    """`[metrics]` as a deployment's airflow.cfg would say it (StatsD on, InfluxDB-style
    tags), in a process that has not set up Stats yet (as the trigger runner has not)."""
    for key, value in {
        "STATSD_ON": "True",
        "STATSD_HOST": "127.0.0.1",
        "STATSD_PORT": str(udp_port),
        "STATSD_PREFIX": STATSD_PREFIX,
        "STATSD_INFLUXDB_ENABLED": "True",
    }.items():
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
    fresh_stats(monkeypatch)


def fresh_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow's Stats as a new process has it, so it reads `[metrics]` again; put back
    after the test."""
    backend = sys.modules.get("airflow.sdk._shared.observability.metrics.stats")
    if backend is not None:  # 3.2+: module-level state, set up by initialize()
        monkeypatch.setattr(backend, "_factory", None)
        monkeypatch.setattr(backend, "_backend", None)
    legacy = sys.modules.get("airflow.stats")
    meta = type(getattr(legacy, "Stats", None))
    if legacy is not None and hasattr(meta, "factory"):  # 3.0, 3.1: the class picks its backend
        monkeypatch.delattr(meta, "factory")
        monkeypatch.setattr(meta, "instance", None)
        # The metaclass keeps the backend it built on the class itself, not on the meta.
        monkeypatch.setattr(legacy.Stats, "instance", None, raising=False)
        # Re-runs the metaclass's choice of backend, from the config as it is now.
        meta.__init__(legacy.Stats)  # type: ignore[misc]
    airflow_metrics.cache_clear()


@pytest.fixture
def airflow_statsd(
    monkeypatch: pytest.MonkeyPatch, statsd_exporter: StatsdExporter
) -> Iterator[StatsdExporter]:
    """Airflow's StatsD client pointed at `statsd_exporter` (see `point_airflow_at`)."""
    point_airflow_at(monkeypatch, statsd_exporter.udp_port)
    try:
        yield statsd_exporter
    finally:
        airflow_metrics.cache_clear()
