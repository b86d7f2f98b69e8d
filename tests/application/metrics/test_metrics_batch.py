"""The metrics of one flush interval as StatsD lines and datagrams (plain data)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_sparkk8s.application.metrics.metrics_batch import (
    MAX_DATAGRAM_BYTES,
    MetricsBatch,
    datagrams,
)


def test_counters_are_summed_gauges_keep_their_last_value_and_every_timer_is_kept():
    batch = MetricsBatch()
    batch.incr("a.pending,reason=Unschedulable", 1)
    batch.timing("a.duration,state=succeeded", 1500.0)
    batch.incr("a.pending,reason=Unschedulable", 2)
    batch.gauge("a.apps,state=running", 7)
    batch.gauge("a.apps,state=running", 5)
    batch.timing("a.duration,state=succeeded", 2000.25)
    assert len(batch) == 4
    assert batch.lines() == [
        "a.pending,reason=Unschedulable:3|c",
        "a.apps,state=running:5|g",
        "a.duration,state=succeeded:1500.000000|ms",
        "a.duration,state=succeeded:2000.250000|ms",
    ]


def test_a_negative_gauge_is_set_to_zero_first_as_statsd_reads_a_bare_minus_as_a_delta():
    batch = MetricsBatch()
    batch.gauge("g", -3)
    assert batch.lines() == ["g:0|g", "g:-3|g"]


def test_an_empty_batch_has_no_lines_and_no_datagrams():
    assert MetricsBatch().lines() == []
    assert datagrams([]) == []


def test_lines_are_packed_in_order_up_to_the_limit():
    lines = ["a" * 10, "b" * 10, "c" * 10]
    assert datagrams(lines, max_bytes=21) == ["a" * 10 + "\n" + "b" * 10, "c" * 10]
    assert datagrams(lines, max_bytes=20) == ["a" * 10, "b" * 10, "c" * 10]
    assert datagrams(["x" * 50, "y"], max_bytes=20) == ["x" * 50, "y"]


@given(st.lists(st.text(alphabet="abc,=.:|0123456789", min_size=1, max_size=200), max_size=60))
def test_packing_keeps_every_line_in_order_and_fills_datagrams_within_the_limit(lines):
    packed = datagrams(lines)
    assert [line for datagram in packed for line in datagram.split("\n")] == lines
    for index, datagram in enumerate(packed):
        assert len(datagram) <= MAX_DATAGRAM_BYTES
        if index + 1 < len(packed):  # the next line did not fit: no datagram is cut short
            following = packed[index + 1].split("\n")[0]
            assert len(datagram) + 1 + len(following) > MAX_DATAGRAM_BYTES
