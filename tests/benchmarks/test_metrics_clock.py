"""The benchmark's metrics clock: what it counts inside the path, and the collector's
passes told apart from the path's own work."""

from __future__ import annotations

import gc

from benchmarks.harness.metrics_clock import MetricsClock


def test_a_collector_pass_inside_the_path_is_counted_apart_and_one_outside_is_not() -> None:
    clock = MetricsClock()
    inside = clock.wrap("inside", lambda: gc.collect(2))
    gc.callbacks.append(clock.on_gc)
    try:
        gc.collect(2)  # outside the path: not the metrics' pass
        inside()
        inside()
    finally:
        gc.callbacks.remove(clock.on_gc)
    clock.settle()
    assert clock.calls == {"inside": 2}
    assert clock.gc_passes == {2: 2}
    assert 0.0 < clock.gc_seconds <= clock.seconds + clock.wrapper_seconds
