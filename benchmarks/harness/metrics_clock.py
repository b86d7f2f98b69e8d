"""The CPU a triggerer's loop spends in the metrics path, clocked inside the loop itself.

Beside the same triggers with metrics off, the loop's CPU differs by the metrics' cost plus
whatever the machine's load does to two processes at once (caches, frequency, who runs
beside whom): several percent between runs on a shared host. The share of one process's
own CPU that its metrics code takes does not depend on that: both parts are measured in the
same process at the same moments. Wrapped here, for the run of a `with` block: where the
trigger hands a look's metrics to the sink (derived, tagged and sent there or at its
flush), where the store sends its gauges and relists, and the sink's flush. Nested entries
count once (a send inside a flush). The clock is the thread's CPU time (the loop runs on one thread;
a wait is not counted), and what the wrappers cost themselves is measured and taken off.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MetricsClock:
    seconds: float = 0.0  # CPU inside the metrics path, wrappers' own cost taken off
    calls: dict[str, int] = field(default_factory=dict)  # entries, by wrapped name
    by_name: dict[str, float] = field(default_factory=dict)  # CPU of the outermost entries
    wrapper_seconds: float = 0.0  # what one empty wrapped call costs, times the entries
    # The cyclic collector's passes that started inside the path: a pass costs what the
    # whole heap holds (the store's pods), not what triggered it, so it is told apart.
    gc_seconds: float = 0.0
    gc_passes: dict[int, int] = field(default_factory=dict)  # inside the path, by generation
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

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        self.calls.setdefault(label, 0)
        self.by_name.setdefault(label, 0.0)

        @functools.wraps(function)
        def clocked(*args: Any, **kwargs: Any) -> Any:
            self.calls[label] += 1
            if self._depth:
                return function(*args, **kwargs)
            self._depth += 1
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                self._raw += spent
                self.by_name[label] += spent
                self._depth -= 1

        return clocked

    def settle(self) -> None:
        """Take the wrappers' own cost off: an empty function clocked the same way."""
        probe = MetricsClock()
        empty = probe.wrap("empty", lambda: None)
        rounds = 20_000
        for _ in range(rounds):
            empty()
        per_call = probe._raw / rounds
        self.wrapper_seconds = per_call * sum(self.calls.values())
        self.seconds = max(0.0, self._raw - self.wrapper_seconds)


@contextlib.contextmanager
def clocked_metrics() -> Iterator[MetricsClock]:
    """The metrics path of the trigger, the store and the batched sink, clocked."""
    from airflow_provider_sparkk8s.hooks import airflow_stats
    from airflow_provider_sparkk8s.services import store
    from airflow_provider_sparkk8s.triggers import spark_k8s

    clock = MetricsClock()
    trigger = spark_k8s.SparkK8sApplicationTrigger
    replaced: list[tuple[Any, str, Any]] = [
        (spark_k8s, "look_metrics", spark_k8s.look_metrics),
        (spark_k8s, "send", spark_k8s.send),
        (trigger, "_metric_tags", trigger._metric_tags),
        (store, "send", store.send),
        (store.SnapshotStore, "report_states", store.SnapshotStore.report_states),
        (airflow_stats.BatchedStatsdSink, "defer", airflow_stats.BatchedStatsdSink.defer),
        (airflow_stats.BatchedStatsdSink, "flush", airflow_stats.BatchedStatsdSink.flush),
    ]
    for owner, name, original in replaced:
        setattr(owner, name, clock.wrap(f"{owner.__name__.rsplit('.', 1)[-1]}.{name}", original))
    gc.callbacks.append(clock.on_gc)
    try:
        yield clock
    finally:
        gc.callbacks.remove(clock.on_gc)
        for owner, name, original in replaced:
            setattr(owner, name, original)
        clock.settle()
