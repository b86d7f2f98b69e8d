"""The metrics sink bound to Airflow's Stats: the trigger, the store and the operator send
the provider's metrics (application/metrics.py) through it.

Whatever backend the deployment's `[metrics]` configured receives them: StatsD (tags as
InfluxDB-style `name,tag=value` with `statsd_influxdb_enabled`), Datadog's DogStatsD or
OpenTelemetry. Without any, the sink is `NO_METRICS` and the followers derive nothing.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any

from airflow_provider_sparkk8s.application.metrics import NO_METRICS, MetricsSink, Tags
from airflow_provider_sparkk8s.version_compat import metrics_configured, stats

log = logging.getLogger(__name__)


class AirflowStatsSink:
    """Tags go as a plain dict (Airflow's loggers read, never keep, them). A metric that
    cannot be sent is dropped: metrics never fail a submission or stop a follower."""

    enabled = True

    def __init__(self, backend: Any):
        self._stats = backend

    def incr(self, name: str, count: int, tags: Tags) -> None:
        try:
            self._stats.incr(name, count, tags=_plain(tags))
        except Exception:
            log.debug("metric %s not sent", name, exc_info=True)

    def gauge(self, name: str, value: float, tags: Tags) -> None:
        try:
            self._stats.gauge(name, value, tags=_plain(tags))
        except Exception:
            log.debug("metric %s not sent", name, exc_info=True)

    def timing(self, name: str, seconds: float, tags: Tags) -> None:
        # A timedelta: StatsD sends it in milliseconds, OpenTelemetry records it as such.
        try:
            self._stats.timing(name, timedelta(seconds=seconds), tags=_plain(tags))
        except Exception:
            log.debug("metric %s not sent", name, exc_info=True)


@functools.cache
def airflow_metrics() -> MetricsSink:
    """One sink per process (config is read once, as Airflow reads its own)."""
    if not metrics_configured():
        return NO_METRICS
    return AirflowStatsSink(stats())


def _plain(tags: Tags) -> dict[str, str]:
    return tags if isinstance(tags, dict) else dict(tags)
