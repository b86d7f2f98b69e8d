"""Real Spark in tests/runtime: on the real node (`real_plane` and its fixtures, in
tests/conftest.py), but for Spark Connect's test, whose client in this process dials the
server pod's IP: it runs on the node agent's plane, as the documented submitter
(`submitter`). The measured times of each run are printed at the end of the session."""

from __future__ import annotations

from pathlib import Path

import pytest

from testenv.controlplane import ControlPlane
from tests.support.real_spark import REAL_SPARK_TIMINGS, submitter_kubeconfig


@pytest.fixture
def submitter(runtime_plane: ControlPlane, runtime_namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig for `runtime_namespace` as the documented submitter (docs/rbac.yaml)."""
    return submitter_kubeconfig(runtime_plane, runtime_namespace, tmp_path / "submitter.kubeconfig")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REAL_SPARK_TIMINGS:
        terminalreporter.section("Real Spark timings (seconds since submission)")
        for name, seconds in REAL_SPARK_TIMINGS.items():
            terminalreporter.write_line(f"{name:<60} {seconds:7.1f}")
