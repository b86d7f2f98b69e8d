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


def test_a_nested_entry_costs_less_to_take_off_than_an_outermost_one() -> None:
    clock = MetricsClock()
    inner = clock.wrap("inner", lambda: None)
    outer = clock.wrap("outer", lambda: [inner() for _ in range(100)])
    outer()
    clock.settle()
    assert clock.calls == {"inner": 100, "outer": 1}
    assert clock.outer_entries == 1
    # One outermost entry's two clock reads; 100 nested ones counted only.
    alone = MetricsClock()
    alone.calls = {"outer": 101}
    alone.outer_entries = 101
    alone.settle()
    assert 0.0 < clock.wrapper_seconds < alone.wrapper_seconds


def test_the_empty_entries_clocked_in_the_loop_give_a_second_figure() -> None:
    clock = MetricsClock()
    work = clock.wrap("work", lambda: sum(range(1000)))
    looked = clock.empty_before(work)
    for _ in range(50):
        looked()
    clock.settle()
    assert clock.empty_in_loop == 50
    assert clock.empty_in_loop_seconds > 0.0
    assert clock.seconds_in_loop_calibrated is not None
    assert 0.0 <= clock.seconds_in_loop_calibrated <= clock.seconds + clock.wrapper_seconds
