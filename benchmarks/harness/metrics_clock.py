"""The CPU a triggerer's loop spends in the metrics path, clocked inside the loop itself.

Beside the same triggers with metrics off, the loop's CPU differs by the metrics' cost plus
whatever the machine's load does to two processes at once (caches, frequency, who runs
beside whom): several percent between runs on a shared host. The share of one process's
own CPU that its metrics code takes does not depend on that: both parts are measured in the
same process at the same moments. Wrapped here, for the run of a `with` block: where the
trigger hands a look's metrics to the sink (derived, tagged and sent there or at its
flush), where the store sends its gauges and relists, and the sink's flush. Nested entries
count once (a send inside a flush). The clock is the thread's CPU time (the loop runs on one thread;
a wait is not counted), and what the wrappers cost themselves is measured and taken off:
an outermost entry (two clock reads) and a nested one (a count only) apart, as they cost
different amounts.

The wrappers' cost is first measured in a tight loop, where the clock reads and the
wrapper's code are in the CPU's caches; in the trigger's loop they are not, like the path
itself. `SPARKK8S_CLOCK_CALIBRATE=1` clocks an empty entry just before each look, in both
children (`empty_in_loop`: its count and CPU, kept out of `seconds`), so what an entry costs
in the loop can be taken off too (`seconds_in_loop_calibrated`).

`SPARKK8S_CLOCK_DETAIL=1` also clocks the nested entries, by name (`inclusive`): where the
path's time goes. Those extra clock reads fall inside the outer entries, so a detailed run
says where, not how much.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MetricsClock:
    seconds: float = 0.0  # CPU inside the metrics path, wrappers' own cost taken off
    calls: dict[str, int] = field(default_factory=dict)  # entries, by wrapped name
    by_name: dict[str, float] = field(default_factory=dict)  # CPU of the outermost entries
    wrapper_seconds: float = 0.0  # what the empty wrapped calls cost, outer and nested
    # The cyclic collector's passes that started inside the path: a pass costs what the
    # whole heap holds (the store's pods), not what triggered it, so it is told apart.
    gc_seconds: float = 0.0
    gc_passes: dict[int, int] = field(default_factory=dict)  # inside the path, by generation
    detail: bool = False  # also clock nested entries (`inclusive`)
    inclusive: dict[str, float] = field(default_factory=dict)  # CPU by name, nested included
    outer_entries: int = 0
    # SPARKK8S_CLOCK_CALIBRATE: empty entries clocked in the loop, and their CPU (clock reads
    # and wrapper in the loop's cache state); `seconds` with that cost per outer entry off.
    empty_in_loop: int = 0
    empty_in_loop_seconds: float = 0.0
    seconds_in_loop_calibrated: float | None = None
    _depth: int = 0
    _raw: float = 0.0
    _gc_started: float | None = None

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.thread_time() if self._depth else None
        elif self._gc_started is not None:
            self.gc_seconds += time.thread_time() - self._gc_started
            generation = int(info.get("generation", -1))
            self.gc_passes[generation] = self.gc_passes.get(generation, 0) + 1
            self._gc_started = None

    def wrap(
        self, label: str, function: Callable[..., Any], always_inclusive: bool = False
    ) -> Callable[..., Any]:
        """`always_inclusive`: clock this name's nested entries even without `detail` (a
        rare entry, such as a first-time wire-name probe)."""
        self.calls.setdefault(label, 0)
        self.by_name.setdefault(label, 0.0)
        self.inclusive.setdefault(label, 0.0)
        timed = self.detail or always_inclusive

        @functools.wraps(function)
        def clocked(*args: Any, **kwargs: Any) -> Any:
            self.calls[label] += 1
            if self._depth:
                if not timed:
                    return function(*args, **kwargs)
                started = time.thread_time()
                try:
                    return function(*args, **kwargs)
                finally:
                    self.inclusive[label] += time.thread_time() - started
            self._depth += 1
            self.outer_entries += 1
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                self._raw += spent
                self.by_name[label] += spent
                self.inclusive[label] += spent
                self._depth -= 1

        return clocked

    def settle(self) -> None:
        """Take the wrappers' own cost off: an empty function clocked the same way, as an
        outermost entry and as a nested one (a detailed run's nested clock reads stay in)."""
        outer = MetricsClock()
        empty = outer.wrap("empty", lambda: None)
        nested = MetricsClock()
        nested_empty = nested.wrap("empty", lambda: None)
        rounds = 20_000
        for _ in range(rounds):
            empty()
        nested._depth = 1  # every entry nested: only its count, as inside the path
        started = time.thread_time()
        for _ in range(rounds):
            nested_empty()
        nested_per_call = (time.thread_time() - started) / rounds
        inner_entries = sum(self.calls.values()) - self.outer_entries
        self.wrapper_seconds = (
            outer._raw / rounds * self.outer_entries + nested_per_call * inner_entries
        )
        self.seconds = max(0.0, self._raw - self.wrapper_seconds)
        if self.empty_in_loop:
            in_loop = self.empty_in_loop_seconds / self.empty_in_loop
            self.seconds_in_loop_calibrated = max(
                0.0, self._raw - in_loop * self.outer_entries - nested_per_call * inner_entries
            )

    def empty_before(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function`, with an empty clocked entry just before each call (calibration)."""

        @functools.wraps(function)
        def calibrated(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            self.empty_in_loop_seconds += time.thread_time() - started
            self.empty_in_loop += 1
            return function(*args, **kwargs)

        return calibrated


@contextlib.contextmanager
def clocked_metrics() -> Iterator[MetricsClock]:
    """The metrics path of the trigger, the store and the batched sink, clocked."""
    from airflow_provider_sparkk8s.hooks import airflow_stats
    from airflow_provider_sparkk8s.services.following import store
    from airflow_provider_sparkk8s.triggers import spark_k8s

    spark_k8s.load_machinery()  # the names clocked below are loaded at a trigger's first run
    clock = MetricsClock(detail=os.environ.get("SPARKK8S_CLOCK_DETAIL") == "1")
    trigger = spark_k8s.SparkK8sApplicationTrigger
    sink = airflow_stats.BatchedStatsdSink
    wanted: list[tuple[Any, str]] = [
        # What a look runs for metrics (the two states' check, the hand-off to the sink), where
        # the trigger has it in one method; the sink's `defer` where it has not.
        (trigger, "_report"),
        (sink, "defer"),
        (spark_k8s, "look_metrics"),
        (spark_k8s, "send"),  # where the trigger sends a look's metrics itself
        (trigger, "_metric_tags"),
        (store, "send"),
        (store.SnapshotStore, "report_states"),
        (sink, "flush"),
    ]
    # A first-time wire name (one pass through Airflow's logger per task, metric and tags):
    # clocked apart, as its count does not grow with the looks.
    probes = (airflow_stats.WireNames, "ask")
    wanted.append(probes)
    if clock.detail:  # where the flush's time goes
        wanted += [
            (spark_k8s, "may_report"),
            (sink, "send_measurements"),
            (sink, "_run_deferred"),
            (airflow_stats, "datagrams"),
            (airflow_stats.MetricsBatch, "lines"),
        ]
    # The names this tree's code has (the clock serves the code before a change and after).
    replaced = [
        (owner, name, getattr(owner, name)) for owner, name in wanted if hasattr(owner, name)
    ]
    for owner, name, original in replaced:
        label = f"{owner.__name__.rsplit('.', 1)[-1]}.{name}"
        setattr(owner, name, clock.wrap(label, original, (owner, name) == probes))
    if os.environ.get("SPARKK8S_CLOCK_CALIBRATE") == "1":  # each look, metrics on or off
        look = trigger._look
        trigger._look = clock.empty_before(look)  # type: ignore[method-assign]
        replaced.append((trigger, "_look", look))
    gc.callbacks.append(clock.on_gc)
    try:
        yield clock
    finally:
        gc.callbacks.remove(clock.on_gc)
        for owner, name, original in replaced:
            setattr(owner, name, original)
        clock.settle()
