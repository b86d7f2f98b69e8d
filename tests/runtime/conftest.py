"""Real Spark on the runtime plane: a namespace with the documented Roles and a submitter
kubeconfig, and the measured times of each run, printed at the end of the session."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from testenv.controlplane import ControlPlane
from tests.support.real_spark import REAL_SPARK_TIMINGS, submitter_kubeconfig


@pytest.fixture
def submitter(runtime_plane: ControlPlane, runtime_namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig for `runtime_namespace` as the documented submitter (docs/rbac.yaml)."""
    return submitter_kubeconfig(runtime_plane, runtime_namespace, tmp_path / "submitter.kubeconfig")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the pods see at the same path (a pod's /tmp is its own, so not under /tmp)."""
    path = Path.home() / ".cache" / "sparkk8s-test-uploads" / secrets.token_hex(4)
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REAL_SPARK_TIMINGS:
        terminalreporter.section("Real Spark timings (seconds since submission)")
        for name, seconds in REAL_SPARK_TIMINGS.items():
            terminalreporter.write_line(f"{name:<60} {seconds:7.1f}")
