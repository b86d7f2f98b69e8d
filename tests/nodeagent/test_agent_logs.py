"""CRI log lines and the kubelet's /containerLogs options (testenv/nodeagent/logs.py)."""

from __future__ import annotations

import datetime

import pytest

from testenv.nodeagent.logs import (
    MAX_MESSAGE_BYTES,
    LogEntry,
    LogOptions,
    cri_line,
    message_from_tail,
    options_from_query,
    parse_cri,
    render,
    select,
)

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC)


def entries(count):
    return [
        LogEntry(T0 + datetime.timedelta(seconds=i), "stdout", f"line {i}") for i in range(count)
    ]


def test_cri_lines_round_trip_with_partial_lines_and_nanoseconds():
    text = cri_line(T0, "stderr", "hello world") + cri_line(T0, "stdout", "part", partial=True)
    assert text.splitlines()[0] == "2026-01-01T12:00:00.123456000Z stderr F hello world"
    assert parse_cri(text.splitlines()) == [
        LogEntry(T0, "stderr", "hello world"),
        LogEntry(T0, "stdout", "part", partial=True),
    ]
    assert parse_cri(["2026-01-01T12:00:00.123456789Z stdout F "]) == [LogEntry(T0, "stdout", "")]


def test_since_then_tail_then_timestamps():
    options = LogOptions(since=T0 + datetime.timedelta(seconds=3), tail_lines=2, timestamps=True)
    chosen = select(entries(10), options)
    assert [e.text for e in chosen] == ["line 8", "line 9"]
    assert render(chosen, timestamps=True).decode().splitlines()[0] == (
        "2026-01-01T12:00:08.123456000Z line 8"
    )
    assert render(entries(2), timestamps=False) == b"line 0\nline 1\n"
    assert select(entries(3), LogOptions(tail_lines=0)) == []


def test_query_options_are_parsed_and_bad_values_named():
    now = T0
    options = options_from_query(
        {"follow": ["true"], "tailLines": ["5"], "sinceSeconds": ["10"], "limitBytes": ["100"], "timestamps": ["1"]},
        now,
    )  # fmt: skip
    assert options == LogOptions(True, 5, now - datetime.timedelta(seconds=10), True, 100)
    assert options_from_query({"sinceTime": ["2026-01-01T12:00:00Z"]}, now).since == T0.replace(
        microsecond=0
    )
    with pytest.raises(ValueError, match="tailLines='x' is not an integer"):
        options_from_query({"tailLines": ["x"]}, now)
    with pytest.raises(ValueError, match="limitBytes='0' must be greater than zero"):
        options_from_query({"limitBytes": ["0"]}, now)
    with pytest.raises(ValueError, match="at most one of sinceTime or sinceSeconds"):
        options_from_query({"sinceTime": ["2026-01-01T12:00:00Z"], "sinceSeconds": ["1"]}, now)


def test_the_termination_message_is_the_last_lines_cut_to_the_last_bytes():
    long = [LogEntry(T0, "stderr", "x" * 100) for _ in range(50)] + [LogEntry(T0, "stderr", "END")]
    message = message_from_tail(long)
    assert message.endswith("END") and len(message.encode()) <= MAX_MESSAGE_BYTES
