"""The metrics sink on Airflow's own StatsD client (whichever Airflow runs the tests: the
compatibility suite runs this on 3.0 too), read back as the datagrams it sends."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
    DURATION,
    EXECUTOR_FAILURES,
    NO_METRICS,
    PENDING,
    STORE_APPLICATIONS,
    TIME_TO_RUNNING,
    Measurement,
    send,
    shared_task_tags,
)
from airflow_provider_sparkk8s.hooks.airflow_stats import (
    BatchedStatsdSink,
    WireNames,
    airflow_metrics,
)
from airflow_provider_sparkk8s.version_compat import stats_backend
from tests.support.statsd import fresh_stats, point_airflow_at


@pytest.fixture
def udp() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(10)
        yield sock


def received(sock: socket.socket, name: str, prefix: str = "airflow") -> str:
    """The first datagram for `name` (Airflow may send its own metrics in between)."""
    while True:
        datagram = sock.recv(65536).decode()
        if datagram.startswith((f"{prefix}.{name},", f"{prefix}.{name}:")):
            return datagram


def ours(sock: socket.socket, prefix: str = "airflow") -> str:
    """The next datagram that carries the provider's metrics."""
    while True:
        datagram = sock.recv(65536).decode()
        if datagram.startswith(f"{prefix}.sparkk8s."):
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


TAGS = {"namespace": "team-a", "dag_id": "etl", "task_id": "spark"}


def test_with_statsd_the_sink_batches_through_airflows_own_logger(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    try:
        assert isinstance(airflow_metrics(), BatchedStatsdSink)
    finally:
        airflow_metrics.cache_clear()


def test_in_the_event_loop_one_interval_of_metrics_goes_in_one_datagram(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    sink = BatchedStatsdSink(stats_backend(), flush_seconds=0.05)
    udp.setblocking(False)

    async def follow() -> str:
        pending = {**TAGS, "reason": "Unschedulable"}
        sink.incr("sparkk8s.driver.pending", 1, pending)
        sink.timing("sparkk8s.driver.time_to_running", 1.5, TAGS)
        sink.gauge("sparkk8s.store.applications", 7, {"namespace": "team-a", "state": "running"})
        sink.incr("sparkk8s.driver.pending", 1, pending)
        sink.timing("sparkk8s.driver.time_to_running", 2.0, TAGS)
        sink.gauge("sparkk8s.store.applications", 6, {"namespace": "team-a", "state": "running"})
        with pytest.raises(BlockingIOError):  # held: nothing is written within the turn
            udp.recv(65536)
        udp.settimeout(10)
        return await asyncio.to_thread(ours, udp)  # the loop runs on and flushes

    task = "namespace=team-a,dag_id=etl,task_id=spark"
    assert asyncio.run(follow()).split("\n") == [
        f"airflow.sparkk8s.driver.pending,{task},reason=Unschedulable:2|c",
        "airflow.sparkk8s.store.applications,namespace=team-a,state=running:6|g",
        f"airflow.sparkk8s.driver.time_to_running,{task}:1500.000000|ms",
        f"airflow.sparkk8s.driver.time_to_running,{task}:2000.000000|ms",
    ]


def test_a_looks_measurements_sent_at_once_reach_statsd_as_sent_one_by_one(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    monkeypatch.setenv("AIRFLOW__METRICS__METRICS_BLOCK_LIST", "sparkk8s.executor")
    fresh_stats(monkeypatch)
    look = (
        Measurement("incr", PENDING, 1, {"reason": "Unschedulable"}),
        Measurement("incr", EXECUTOR_FAILURES, 1, {"reason": "OOMKilled"}),  # blocked
        Measurement("timing", TIME_TO_RUNNING, 1.5, {}),
        Measurement("timing", DURATION, 60.0, {"state": "failed"}),
        Measurement("gauge", STORE_APPLICATIONS, 3, {"state": "running"}),
    )
    tags = shared_task_tags("team-a", "etl", "spark")

    def written(through: Any) -> list[str]:
        sink = BatchedStatsdSink(stats_backend())

        async def two_looks() -> None:  # in a loop: held, then written in one datagram
            for _ in range(2):  # the second look finds every wire name remembered
                through(sink, look, tags)
            sink.flush()

        asyncio.run(two_looks())
        return ours(udp).split("\n")

    def one_by_one(sink: BatchedStatsdSink, measured: Any, tags: Any) -> None:
        for m in measured:
            getattr(sink, m.kind)(m.name, m.value, {**tags, **m.tags})

    task = "namespace=team-a,dag_id=etl,task_id=spark"
    at_once = written(send)  # send() hands the whole look to send_measurements
    assert at_once == written(one_by_one)
    assert at_once == [
        f"airflow.sparkk8s.driver.pending,{task},reason=Unschedulable:2|c",
        f"airflow.sparkk8s.store.applications,{task},state=running:3|g",
        f"airflow.sparkk8s.driver.time_to_running,{task}:1500.000000|ms",
        f"airflow.sparkk8s.application.duration,{task},state=failed:60000.000000|ms",
        f"airflow.sparkk8s.driver.time_to_running,{task}:1500.000000|ms",
        f"airflow.sparkk8s.application.duration,{task},state=failed:60000.000000|ms",
    ]
    airflow_metrics.cache_clear()


def test_the_deployments_prefix_allow_list_and_disabled_tags_still_apply(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PREFIX", "platform")
    monkeypatch.setenv("AIRFLOW__METRICS__METRICS_ALLOW_LIST", "sparkk8s.driver")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_DISABLED_TAGS", "task_id")
    fresh_stats(monkeypatch)
    try:
        sink = airflow_metrics()
        assert isinstance(sink, BatchedStatsdSink)
        # Outside an event loop each metric is written at once: the first datagram that
        # arrives shows that the allow list dropped the one sent before it.
        sink.timing("sparkk8s.application.duration", 3.0, {**TAGS, "state": "succeeded"})
        sink.timing("sparkk8s.driver.time_to_running", 1.5, TAGS)
        assert ours(udp, prefix="platform") == (
            "platform.sparkk8s.driver.time_to_running,namespace=team-a,dag_id=etl:1500.000000|ms"
        )
    finally:
        airflow_metrics.cache_clear()


def test_the_deployments_block_list_still_applies(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    monkeypatch.setenv("AIRFLOW__METRICS__METRICS_BLOCK_LIST", "store")
    fresh_stats(monkeypatch)
    try:
        sink = airflow_metrics()
        sink.gauge("sparkk8s.store.applications", 1, {"namespace": "team-a", "state": "running"})
        sink.incr("sparkk8s.store.watch_relists", 1, {"namespace": "team-a"})
        sink.incr("sparkk8s.executor.failures", 1, {**TAGS, "reason": "OOMKilled"})
        assert ours(udp) == (
            "airflow.sparkk8s.executor.failures,namespace=team-a,dag_id=etl,task_id=spark,"
            "reason=OOMKilled:1|c"
        )
    finally:
        airflow_metrics.cache_clear()


class CountingLogger:
    """A stand-in logger: appends the tags as Airflow's does, drops names with "bad"."""

    def __init__(self) -> None:
        self.statsd: Any = None
        self.asked: list[str] = []

    def incr(self, stat: str, count: int = 1, *, tags: dict[str, str]) -> None:
        self.asked.append(stat)
        if "bad" in stat:
            return
        if stat == "raises":
            raise ValueError(stat)
        self.statsd.incr(stat + "".join(f",{k}={v}" for k, v in tags.items()), count, 1)


def test_wire_names_asks_the_logger_once_per_name_and_tags():
    logger = CountingLogger()
    logger.statsd = type("Client", (), {"_prefix": "p"})()
    names = WireNames(logger)
    assert names.get("incr", "m", {"a": "1"}) == "p.m,a=1"
    assert names.get("incr", "m", {"a": "1"}) == "p.m,a=1"
    assert names.get("incr", "m", {"a": "2"}) == "p.m,a=2"
    assert names.get("incr", "bad", {}) is None
    assert names.get("incr", "bad", {}) is None
    assert names.get("incr", "raises", {}) is None
    assert logger.asked == ["m", "m", "bad", "raises"]


def test_a_flush_armed_on_a_loop_that_ended_is_armed_again_on_the_next(monkeypatch, udp):
    point_airflow_at(monkeypatch, udp.getsockname()[1])
    now = [0.0]
    sink = BatchedStatsdSink(stats_backend(), flush_seconds=0.05, clock=lambda: now[0])

    async def first() -> None:
        sink.incr("sparkk8s.driver.pending", 1, {**TAGS, "reason": "first"})

    async def second() -> str:
        sink.incr("sparkk8s.driver.pending", 1, {**TAGS, "reason": "second"})
        return await asyncio.to_thread(ours, udp)

    asyncio.run(first())  # ends before its flush is due: the metric stays held
    now[0] = 10.0  # long past that flush
    lines = asyncio.run(second()).split("\n")
    assert [line.split(",reason=")[1] for line in lines] == ["first:1|c", "second:1|c"]


def test_a_write_that_fails_is_dropped_and_the_next_one_goes():
    sent: list[str] = []

    class Client:
        _prefix = None
        fail = True

        def _send(self, data: str) -> None:
            if self.fail:
                self.fail = False
                raise OSError("unreachable")
            sent.append(data)

    class Logger:
        statsd = Client()

        def incr(self, stat: str, count: int, *, tags: dict[str, str]) -> None:
            self.statsd.incr(stat, count)

        gauge = timing = incr

    sink = BatchedStatsdSink(Logger())
    sink.incr("a", 1, {})  # no event loop: written at once, and the write fails
    sink.incr("b", 1, {})
    assert sent == ["b:1|c"]


def test_a_backend_without_a_statsd_client_keeps_the_per_call_sink(monkeypatch):
    """DogStatsD's and OpenTelemetry's loggers (no `statsd` client): one Stats call each."""
    from airflow_provider_sparkk8s.hooks import airflow_stats

    class OtelLike:
        def incr(self, *args: object, **kwargs: object) -> None: ...

        gauge = timing = incr

    monkeypatch.setattr(airflow_stats, "metrics_configured", lambda: True)
    monkeypatch.setattr(airflow_stats, "stats_backend", OtelLike)
    monkeypatch.setattr(airflow_stats, "stats", OtelLike)
    airflow_metrics.cache_clear()
    try:
        assert type(airflow_metrics()) is airflow_stats.AirflowStatsSink
    finally:
        airflow_metrics.cache_clear()


def recording_sink(sent: list[str], on_send: Any = None) -> BatchedStatsdSink:
    class Client:
        _prefix = None

        def _send(self, data: str) -> None:
            sent.append(data)
            if on_send is not None:
                on_send()

    class Logger:
        statsd: Any = Client()

        def incr(self, stat: str, count: int, *, tags: dict[str, str]) -> None:
            self.statsd.incr(stat, count)

        gauge = timing = incr

    return BatchedStatsdSink(Logger(), flush_seconds=0.05)


def failing_derivation() -> None:
    raise ZeroDivisionError


def test_in_the_event_loop_deferred_work_runs_at_the_flush_and_its_metrics_go_with_it():
    sent: list[str] = []
    ran: list[str] = []

    async def follow() -> list[str]:
        written = asyncio.Event()
        sink = recording_sink(sent, written.set)

        def look() -> None:
            ran.append("derived")
            sink.incr("derived", 1, {})

        sink.incr("first", 1, {})
        sink.defer(look)
        sink.defer(failing_derivation)  # dropped; the rest still goes
        assert ran == [] and sent == []  # held within the turn: nothing derived yet
        await asyncio.wait_for(written.wait(), 10)  # the loop runs on and flushes
        return sent

    assert asyncio.run(follow()) == ["first:1|c\nderived:1|c"]
    assert ran == ["derived"]


def test_outside_an_event_loop_deferred_work_runs_and_is_written_at_once():
    sent: list[str] = []
    sink = recording_sink(sent)
    sink.defer(lambda: sink.incr("now", 1, {}))
    assert sent == ["now:1|c"]


def test_a_forked_child_drops_the_parents_deferred_work():
    sent: list[str] = []
    sink = recording_sink(sent)

    async def hold() -> None:
        sink.defer(lambda: sink.incr("parents", 1, {}))
        sink.forget()  # what the fork hook does in the child

    asyncio.run(hold())
    sink.flush()
    assert sent == []
