"""The metrics sink bound to Airflow's Stats: the trigger, the store and the operator send
the provider's metrics (application/metrics/provider_metrics.py) through it.

Whatever backend the deployment's `[metrics]` configured receives them: StatsD (tags as
InfluxDB-style `name,tag=value` with `statsd_influxdb_enabled`), Datadog's DogStatsD or
OpenTelemetry. Without any, the sink is `NO_METRICS` and the followers derive nothing.

With StatsD, a triggerer following thousands of applications would otherwise pay, per
metric, Airflow's name and tag checks and one datagram (the 10,000-application benchmark in
docs/benchmarks.md measured that at +7 to +15 % of the loop's CPU). `BatchedStatsdSink` keeps
Airflow's logger as the judge of every name: the wire name of a (metric, tags) is what that
logger would send (its `stat_name_handler`, `statsd_disabled_tags`, allow or block list,
then the client's `statsd_prefix`), asked once and remembered. It holds the metrics of one
interval (`metrics_batch.MetricsBatch`) and writes them through the logger's own StatsD
client in as few datagrams as fit. DogStatsD and OpenTelemetry batch in their own clients:
they keep the per-call sink.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import enum
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

from airflow_provider_sparkk8s.application.metrics.metrics_batch import MetricsBatch, datagrams
from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
    NO_METRICS,
    DeferredWork,
    Measurement,
    MetricsSink,
    SharedTags,
    Tags,
    send,
)
from airflow_provider_sparkk8s.version_compat import metrics_configured, stats, stats_backend

log = logging.getLogger(__name__)


class Missing(enum.Enum):
    """A wire name not yet asked of the logger (None is an answer: the logger drops it)."""

    MISSING = enum.auto()


MISSING = Missing.MISSING

# How long the trigger's event loop holds metrics before it writes them: well under a
# StatsD server's own flush interval (10 s by default), so no server flush sees less.
FLUSH_SECONDS = 1.0
# Measurements held beyond this are written at once (memory stays bounded in a burst).
MAX_HELD = 512
# Deferred looks held beyond this are run at once. Not more: in a burst of first looks (a
# triggerer starting with 2,000 triggers), holding them all for the interval kept their
# steps through the collector's young passes into the old generation, and the flush then
# began a full pass (0.15 s) in two runs of two (README, "Metrics on and off").
MAX_DEFERRED = 512
# How often (in deferred looks) `defer` checks its flush is still armed (a clock read and a
# loop lookup, more than the append itself): a flush armed on a loop that ended is found
# within this many looks (MAX_DEFERRED is a multiple: the bound is checked at these counts).
CHECK_EVERY = 64
# Wire names remembered; past this the memory starts again (tags are per task, so this is
# reached only by a deployment with that many tasks sending at once).
MAX_NAMES = 10_000


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

    def defer(self, work: DeferredWork) -> None:
        got = _run(work)  # the client sends or buffers each metric itself
        if got is not None:
            send(self, *got)


class _Probe:
    """Stands in for the StatsD client behind a copy of Airflow's logger: it keeps the name
    the logger would have sent (None: the logger dropped the metric)."""

    def __init__(self) -> None:
        self.stat: str | None = None

    def incr(self, stat: str, *args: Any, **kwargs: Any) -> None:
        self.stat = stat

    gauge = timing = incr


class WireNames:
    """(kind, name, tags) -> the name Airflow's StatsD logger sends for it, or None where
    its rules drop the metric; each asked of the logger once. Its rules are functions of
    the name and tags (the checks, the lists, the configured handler), so a remembered
    answer is the answer."""

    def __init__(self, logger: Any):
        self._probe = _Probe()
        self._judge = copy.copy(logger)  # the same validators and handler, another client
        self._judge.statsd = self._probe
        prefix = getattr(logger.statsd, "_prefix", None)
        self._prefix = f"{prefix}." if prefix else ""
        self._known: dict[tuple[Any, ...], str | None] = {}
        # (key, MISSING) -> the remembered answer for `key` (kind, name, then the tags' items
        # in order), or MISSING: a look's measurements are looked up without merging their
        # tags first. The dict's own method: this runs once per measurement.
        self.known: Callable[[tuple[Any, ...], Missing], str | Missing | None] = self._known.get
        self._lock = threading.Lock()

    def get(self, kind: str, name: str, tags: Tags) -> str | None:
        key = (kind, name, *tags.items())
        try:
            return self._known[key]
        except KeyError:
            return self.ask(key, kind, name, tags)

    def ask(self, key: tuple[Any, ...], kind: str, name: str, tags: Tags) -> str | None:
        """The logger's answer for a (kind, name, tags) not yet remembered, under `key`."""
        with self._lock:
            self._probe.stat = None
            try:
                # The logger's own method: tags appended, name checked, lists applied.
                getattr(self._judge, kind)(name, 0, tags=_plain(tags))
            except Exception:
                log.debug("metric %s not sent", name, exc_info=True)
                self._probe.stat = None
            stat = self._probe.stat
            wire = None if stat is None else self._prefix + stat
            if len(self._known) >= MAX_NAMES:
                self._known.clear()
            self._known[key] = wire
            return wire

    def after_fork(self) -> None:
        self._lock = threading.Lock()  # another thread of the parent may have held it


class BatchedStatsdSink:
    """Airflow's StatsD logger, judged once per name and tags, written once per interval.

    Inside an event loop (the triggerer) the first metric of an interval arms one flush
    `FLUSH_SECONDS` later on that loop; elsewhere (the worker) each metric is written at
    once. `flush` is also called at exit. A write that fails is dropped, never raised."""

    enabled = True

    def __init__(
        self,
        logger: Any,
        flush_seconds: float = FLUSH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._client = logger.statsd
        self._clock = clock
        self._names = WireNames(logger)
        self._flush_seconds = flush_seconds
        self._batch = MetricsBatch()
        self._deferred: list[DeferredWork] = []
        self._lock = threading.Lock()
        self._armed_until: float | None = None

    def defer(self, work: DeferredWork) -> None:
        """Derive at the flush, not at each look: run between a loop's other work, a look's
        few microseconds of metrics code cost several times as much (clocked inside the
        trigger benchmark's loop: 18 us to derive a look's metrics, where a tight loop takes
        3.5); at the flush the interval's looks run one after another. So a hand-off is an
        append (atomic under the GIL; `flush` swaps the list under the lock); the first of
        an interval arms the flush, and every CHECK_EVERY-th checks it."""
        deferred = self._deferred
        deferred.append(work)
        held = len(deferred)
        if held == 1 or not held % CHECK_EVERY:
            self._held()

    def incr(self, name: str, count: int, tags: Tags) -> None:
        stat = self._names.get("incr", name, tags)
        if stat is not None:
            with self._lock:
                self._batch.incr(stat, count)
            self._held()

    def gauge(self, name: str, value: float, tags: Tags) -> None:
        stat = self._names.get("gauge", name, tags)
        if stat is not None:
            with self._lock:
                self._batch.gauge(stat, value)
            self._held()

    def timing(self, name: str, seconds: float, tags: Tags) -> None:
        stat = self._names.get("timing", name, tags)
        if stat is not None:
            with self._lock:
                self._batch.timing(stat, seconds * 1000.0)
            self._held()

    def send_measurements(self, measurements: Iterable[Measurement], tags: Tags) -> None:
        """A look's measurements with the application's `tags` added to their own (what
        `metrics.send` does for any sink), in one call: each wire name is found by the tags'
        items, so a merged dict is made only for a name not yet asked of the logger."""
        found: list[tuple[str, str, float]] = []
        self._wire(measurements, tags, found)
        if found:
            self._hold(found)
            self._held()

    def _wire(
        self, measurements: Iterable[Measurement], tags: Tags, found: list[tuple[str, str, float]]
    ) -> None:
        """(kind, wire name, value) of each measurement the logger keeps, onto `found`."""
        names = self._names
        known = names.known
        # A task's shared tags stand for their items in the key (the object is kept alive
        # by it); other tags by their items.
        base = (tags,) if type(tags) is SharedTags else tuple(tags.items())
        for kind, name, value, own in measurements:
            key = (kind, name, *base, *own.items()) if own else (kind, name, *base)
            stat = known(key, MISSING)
            if stat is MISSING:
                stat = names.ask(key, kind, name, {**tags, **own} if own else tags)
            if stat is not None:
                found.append((kind, stat, value))  # type: ignore[arg-type]

    def _hold(self, found: list[tuple[str, str, float]]) -> None:
        with self._lock:
            batch = self._batch
            for what, wire, number in found:
                if what == "timing":
                    batch.timing(wire, number * 1000.0)
                elif what == "incr":
                    batch.incr(wire, int(number))
                else:
                    batch.gauge(wire, number)

    def flush(self) -> None:
        """Run the deferred work, then write what is held, in as few datagrams as fit."""
        with self._lock:
            deferred, self._deferred = self._deferred, []
        if deferred:
            self._run_deferred(deferred)
        with self._lock:
            batch, self._batch = self._batch, MetricsBatch()
            self._armed_until = None
        if not len(batch):
            return
        for datagram in datagrams(batch.lines()):
            try:
                self._client._send(datagram)  # the client's own write (statsd's `_send`)
            except Exception:
                log.debug("metrics datagram not sent", exc_info=True)

    def _run_deferred(self, deferred: list[DeferredWork]) -> None:
        """The interval's looks one after another; what they return is named and held in
        one pass, under one lock (not one call, lock and flush check per look)."""
        found: list[tuple[str, str, float]] = []
        wire = self._wire
        for work in deferred:
            try:  # _run's guard, inline: this runs once per look
                got = work()
            except Exception:
                log.debug("metrics not derived", exc_info=True)
                continue
            if got is not None and got[0]:
                wire(got[0], got[1], found)
        if found:
            self._hold(found)

    def forget(self) -> None:
        """In a forked child: what the parent held is the parent's to write."""
        self._batch = MetricsBatch()
        self._deferred = []
        self._armed_until = None
        self._lock = threading.Lock()
        self._names.after_fork()

    def _held(self) -> None:
        if self._batch.added >= MAX_HELD or len(self._deferred) >= MAX_DEFERRED:
            self.flush()
            return
        now = self._clock()
        armed = self._armed_until
        # Armed and not stale (a flush whose loop ended before it ran is stale).
        if armed is not None and now < armed + self._flush_seconds:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._armed_until = now + self._flush_seconds
        loop.call_later(self._flush_seconds, self.flush)


@functools.cache
def airflow_metrics() -> MetricsSink:
    """One sink per process (config is read once, as Airflow reads its own)."""
    if not metrics_configured():
        return NO_METRICS
    backend = stats_backend()
    if not _is_statsd_logger(backend):
        return AirflowStatsSink(stats())
    sink = BatchedStatsdSink(backend)
    atexit.register(sink.flush)
    os.register_at_fork(after_in_child=sink.forget)
    return sink


def _is_statsd_logger(backend: Any) -> bool:
    """Airflow's SafeStatsdLogger over a statsd client (the only ones `statsd_on` builds:
    `statsd_custom_client_path` must subclass statsd's StatsClient)."""
    client = getattr(backend, "statsd", None)
    return (
        client is not None
        and callable(getattr(client, "_send", None))
        and all(callable(getattr(backend, kind, None)) for kind in ("incr", "gauge", "timing"))
    )


def _run(work: DeferredWork) -> tuple[Sequence[Measurement], Tags] | None:
    try:
        return work()
    except Exception:
        log.debug("metrics not derived", exc_info=True)
        return None


def _plain(tags: Tags) -> dict[str, str]:
    return tags if isinstance(tags, dict) else dict(tags)
