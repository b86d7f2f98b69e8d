"""The metrics of one flush interval, held together and written as few StatsD datagrams.

A datagram costs the sender far more than a line in it (the system call, and on a shared
host the kernel waking the StatsD server inside that call), so the sink holds what the
followers measure for an interval and writes it at once. Holding loses nothing a StatsD
server would keep: it sums counters and keeps a gauge's last value per flush itself, and
every timer value is kept here. StatsD reads several metrics from one datagram, one per
line.

Pure: plain data in, lines and datagrams out; the names arrive as the backend will send
them (prefix and tags applied), so nothing here knows Airflow.
"""

from __future__ import annotations

from collections.abc import Iterable

# Etsy StatsD's advice for a network with the usual 1500-byte MTU: a datagram that is
# never fragmented on the way (512 is its advice for the open internet).
MAX_DATAGRAM_BYTES = 1432


class MetricsBatch:
    """Counters summed, gauges at their last value, timers in order, per wire name."""

    __slots__ = ("_counters", "_gauges", "_timers", "added")

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._gauges: dict[str, float] = {}
        self._timers: list[tuple[str, float]] = []
        self.added = 0  # measurements taken, summed ones included (the sink's cheap bound)

    def __len__(self) -> int:
        return len(self._counters) + len(self._gauges) + len(self._timers)

    def incr(self, stat: str, count: int) -> None:
        self._counters[stat] = self._counters.get(stat, 0) + count
        self.added += 1

    def gauge(self, stat: str, value: float) -> None:
        self._gauges[stat] = value
        self.added += 1

    def timing(self, stat: str, milliseconds: float) -> None:
        self._timers.append((stat, milliseconds))
        self.added += 1

    def lines(self) -> list[str]:
        """StatsD lines, as the statsd client formats them (counters, then gauges, then
        timers). A negative gauge is set to zero first: a bare `-n|g` means "subtract n"."""
        lines = [f"{stat}:{count}|c" for stat, count in self._counters.items()]
        for stat, value in self._gauges.items():
            if value < 0:
                lines.append(f"{stat}:0|g")
            lines.append(f"{stat}:{value}|g")
        lines.extend(f"{stat}:{ms:0.6f}|ms" for stat, ms in self._timers)
        return lines


def datagrams(lines: Iterable[str], max_bytes: int = MAX_DATAGRAM_BYTES) -> list[str]:
    """The lines joined by newlines into as few datagrams of at most `max_bytes` as their
    order allows (the lines are ASCII: characters are bytes); a longer line goes alone."""
    packed: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        if current and size + 1 + len(line) > max_bytes:
            packed.append("\n".join(current))
            current, size = [], 0
        size += len(line) + (1 if current else 0)
        current.append(line)
    if current:
        packed.append("\n".join(current))
    return packed
