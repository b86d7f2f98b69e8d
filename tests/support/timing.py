"""Where a pytest session's time went, printed at its end (before pytest's own summary line,
which stays the last line: CI reads it).

    time: set-up 212.4 s (session and module fixtures 180.2 s: real_plane 61.0 s, ...),
          tests 1398.0 s, teardown 20.3 s
    ten slowest:
       136.71 s  call      tests/runtime/test_run_summary_real_spark.py::test_...

Set-up, test (call) and teardown are the sums of pytest's phase durations. A session or
module fixture's start is timed on its own (pytest_fixture_setup, less the fixtures it asks
for while it runs, so nothing counts twice), since its set-up lands on the first test that
uses it: the control plane's start shows by name, not only as one test's slow set-up.

With SPARKK8S_TIMINGS=FILE, every phase is also written to FILE as a tab-separated line:
node id, phase, wall seconds and the machine's busy CPU seconds over it (/proc/stat, every
process: a test's servers and JVMs are not pytest's children). Read alone, one lane's file
says what each test costs the machine; with both lanes running, their CPU mixes.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field

import pytest

SLOWEST = 10
FIXTURES_SHOWN = 5
MIN_SHOWN = 0.1  # seconds
WIDE_SCOPES = frozenset({"session", "package", "module", "class"})


@dataclass(frozen=True)
class Phase:
    nodeid: str
    when: str  # "setup", "call" or "teardown"
    seconds: float


@dataclass(frozen=True)
class FixtureStart:
    name: str
    scope: str
    seconds: float  # its own, less the fixtures it set up while it ran


def time_block(phases: Iterable[Phase], starts: Iterable[FixtureStart]) -> list[str]:
    """The lines of the block: the three sums, then the slowest phases, one a line."""
    phases = list(phases)
    totals: dict[str, float] = defaultdict(float)
    for phase in phases:
        totals[phase.when] += phase.seconds
    by_fixture: dict[str, float] = defaultdict(float)
    for start in starts:
        if start.scope in WIDE_SCOPES:
            by_fixture[start.name] += start.seconds
    sums = (
        f"time: set-up {totals['setup']:.1f} s{_wide_fixtures(by_fixture)}, "
        f"tests {totals['call']:.1f} s, teardown {totals['teardown']:.1f} s"
    )
    lines = [sums, f"{_count_word(min(SLOWEST, len(phases)))} slowest:"]
    slowest = sorted(phases, key=lambda phase: phase.seconds, reverse=True)[:SLOWEST]
    lines += [f"  {p.seconds:8.2f} s  {p.when:<8}  {p.nodeid}" for p in slowest]
    return lines


def _wide_fixtures(by_fixture: dict[str, float]) -> str:
    """' (session and module fixtures 61.2 s: real_plane 40.1 s, ...)'; names under a tenth
    of a second (pytest-asyncio's event_loop_policy, a temp folder) are left out."""
    if sum(by_fixture.values()) < MIN_SHOWN:
        return ""
    shown = sorted(
        ((seconds, name) for name, seconds in by_fixture.items() if seconds >= MIN_SHOWN),
        reverse=True,
    )
    names = ", ".join(f"{name} {seconds:.1f} s" for seconds, name in shown[:FIXTURES_SHOWN])
    names += ", ..." if len(shown) > FIXTURES_SHOWN else ""
    total = f"session and module fixtures {sum(by_fixture.values()):.1f} s"
    return f" ({total}: {names})" if names else f" ({total})"


def _count_word(n: int) -> str:
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[n] if n < len(words) else str(n)


def machine_busy_seconds(stat: str | None = None) -> float:
    """CPU seconds the machine spent busy since boot: /proc/stat's first line, less idle and
    iowait (0.0 where there is no /proc/stat)."""
    if stat is None:
        try:
            with open("/proc/stat") as lines:
                stat = lines.readline()
        except OSError:
            return 0.0
    ticks = [int(value) for value in stat.split()[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def record_line(nodeid: str, when: str, wall: float, busy: float) -> str:
    return f"{nodeid}\t{when}\t{wall:.3f}\t{busy:.2f}\n"


@dataclass
class _Open:
    started: float
    children: float = 0.0


@dataclass(eq=False)  # hashable by identity, as pluggy wants a plugin
class SessionTimes:
    """One session's phases and fixture starts (an object per session, so a nested pytest
    run in-process, as pytester's, keeps its own)."""

    phases: list[Phase] = field(default_factory=list)
    starts: list[FixtureStart] = field(default_factory=list)
    _open: list[_Open] = field(default_factory=list)
    record: str | None = None
    # Each phase's busy seconds, taken as it runs: pytest-rerunfailures reports a test's
    # phases only after all of them ran, so the report cannot be the clock.
    _busy: dict[tuple[str, str], float] = field(default_factory=dict)

    def _timed(self, item: pytest.Item, when: str) -> Generator[None, None, None]:
        started = machine_busy_seconds()
        yield
        self._busy[item.nodeid, when] = machine_busy_seconds() - started

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._timed(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._timed(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._timed(item, "teardown")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.phases.append(Phase(report.nodeid, report.when, report.duration))
        if self.record:
            busy = self._busy.pop((report.nodeid, report.when), 0.0)
            with open(self.record, "a") as out:
                out.write(record_line(report.nodeid, report.when, report.duration, busy))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[object]
    ) -> Generator[None, None, None]:
        opened = _Open(time.perf_counter())
        self._open.append(opened)
        try:
            yield
        finally:
            self._open.pop()
            elapsed = time.perf_counter() - opened.started
            if self._open:
                self._open[-1].children += elapsed
            own = elapsed - opened.children
            self.starts.append(FixtureStart(fixturedef.argname, fixturedef.scope, own))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.phases:
            return
        terminalreporter.section("where the time went")
        for line in time_block(self.phases, self.starts):
            terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    times = SessionTimes(record=os.environ.get("SPARKK8S_TIMINGS") or None)
    config.pluginmanager.register(times, "sparkk8s-session-times")
