"""The time block at a session's end: the phase sums, the session and module fixtures by
name, the ten slowest phases, all before pytest's summary line, which stays the last."""

from __future__ import annotations

import os

import pytest

from tests.support import timing
from tests.support.timing import FixtureStart, Phase, machine_busy_seconds, time_block

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def test_the_block_sums_each_phase_and_names_the_slowest_first():
    phases = [Phase(f"t.py::test_{n}", "call", n / 10) for n in range(12)]
    phases += [Phase("t.py::test_11", "setup", 5.0), Phase("t.py::test_11", "teardown", 0.25)]
    starts = [
        FixtureStart("control_plane", "session", 4.5),
        FixtureStart("event_loop_policy", "session", 0.001),
        FixtureStart("tmp_path", "function", 0.3),
    ]
    lines = time_block(phases, starts)
    assert lines[0] == (
        "time: set-up 5.0 s (session and module fixtures 4.5 s: control_plane 4.5 s), "
        "tests 6.6 s, teardown 0.2 s"
    )
    assert lines[1] == "ten slowest:"
    assert lines[2].split() == ["5.00", "s", "setup", "t.py::test_11"]
    assert lines[3].split() == ["1.10", "s", "call", "t.py::test_11"]
    assert len(lines) == 12


def test_a_short_session_says_how_many_it_lists_and_no_fixtures_of_no_time():
    starts = [FixtureStart("event_loop_policy", "session", 0.001)]
    lines = time_block([Phase("t.py::test_a", "call", 0.5)], starts)
    assert lines == [
        "time: set-up 0.0 s, tests 0.5 s, teardown 0.0 s",
        "one slowest:",
        "      0.50 s  call      t.py::test_a",
    ]


def test_the_block_comes_before_the_summary_line_and_nested_starts_count_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(
        """
import time
import os

import pytest

@pytest.fixture(scope="session")
def plane():
    time.sleep(0.4)

@pytest.fixture(scope="module")
def stack(request):
    request.getfixturevalue("plane")  # inside: its time is the plane's, not the stack's
    time.sleep(0.1)
"""
    )
    pytester.makepyfile(test_slow="def test_one(stack):\n    pass\n\ndef test_two():\n    pass\n")
    result = pytester.runpytest("-p", "tests.support.timing", "-q")
    result.assert_outcomes(passed=2)
    (block,) = [line for line in result.outlines if line.startswith("time: set-up")]
    figures = block.split("fixtures ")[1].split(":")[1].split(")")[0]
    seconds = {name: float(s) for name, s, _ in (part.split() for part in figures.split(", "))}
    assert seconds["plane"] >= 0.4 and seconds["stack"] < seconds["plane"]
    assert "six slowest:" in result.outlines  # two tests, three phases each
    assert result.outlines[-1].startswith("2 passed")


def test_the_machines_busy_time_leaves_out_idle_and_iowait() -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal
    line = f"cpu  {3 * ticks} 0 {ticks} {50 * ticks} {7 * ticks} 0 0 0 0 0"
    assert machine_busy_seconds(line) == 4.0


def test_each_phase_is_written_with_its_wall_and_the_machines_busy_time(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    # Marked flaky, as the e2e tests are: pytest-rerunfailures then reports the phases only
    # after all three ran, and each must still carry its own busy time.
    pytester.makepyfile(
        test_busy="import pytest\n\n@pytest.mark.flaky(reruns=1)\n"
        "def test_spins():\n    sum(range(3_000_000))\n"
    )
    record = pytester.path / "times.tsv"
    monkeypatch.setenv("SPARKK8S_TIMINGS", str(record))
    # The machine's counter as read at each phase's start and end, in order: setup 0, call
    # 2.5, teardown 1 busy seconds (the real counter moves with whatever else runs here).
    # Only for the inner run: this test's own phases are timed by the same module.
    readings = iter([10.0, 10.0, 20.0, 22.5, 30.0, 31.0])
    with monkeypatch.context() as inner:
        inner.setattr(timing, "machine_busy_seconds", lambda stat=None: next(readings))
        pytester.runpytest("-p", "tests.support.timing", "-q").assert_outcomes(passed=1)
    rows = [line.split("\t") for line in record.read_text().splitlines()]
    assert [row[:2] for row in rows] == [
        ["test_busy.py::test_spins", "setup"],
        ["test_busy.py::test_spins", "call"],
        ["test_busy.py::test_spins", "teardown"],
    ]
    assert [row[3] for row in rows] == ["0.00", "2.50", "1.00"]
    assert float(rows[1][2]) > 0  # the call's wall time
