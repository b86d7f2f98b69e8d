"""Real Spark in tests/runtime, on the real node (`real_plane` and its fixtures, in
tests/conftest.py). The measured times of each run are printed at the end of the session."""

from __future__ import annotations

import pytest

from testenv.real_spark import REAL_SPARK_TIMINGS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REAL_SPARK_TIMINGS:
        terminalreporter.section("Real Spark timings (seconds since submission)")
        for name, seconds in REAL_SPARK_TIMINGS.items():
            terminalreporter.write_line(f"{name:<60} {seconds:7.1f}")
