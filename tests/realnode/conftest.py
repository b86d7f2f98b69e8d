"""The real node (testenv/realnode): a control plane whose only node is the real kubelet
v1.35.4 with containerd and runc, in namespaces this session makes and removes. Nothing
starts until a test asks for `real_plane`. The session fixtures `real_node` and `real_plane`
are in tests/conftest.py, so tests/e2e's Airflow stack shares this session's one node."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from testenv.controlplane import ControlPlane
from tests.conftest import _fresh_namespace, spark_lines_of
from tests.support.real_spark import REAL_SPARK_TIMINGS, submitter_kubeconfig

__all__ = ["spark_lines_of"]  # tests/realnode/test_realnode_config.py imports it from here


@pytest.fixture
def real_namespace(real_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    yield from _fresh_namespace(real_plane, request)


@pytest.fixture
def real_submitter(real_plane: ControlPlane, real_namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig for `real_namespace` as the documented submitter (docs/rbac.yaml)."""
    return submitter_kubeconfig(real_plane, real_namespace, tmp_path / "submitter.kubeconfig")


@pytest.fixture
def real_shared_dir() -> Iterator[Path]:
    """A host folder for uploads and outputs that the tests mount into their pods at the same
    path (`host_folder_conf`). Open to all: the tests write it as root, the pods as the
    image's user 185. Not under /tmp, which the tests' own temp folders share."""
    path = Path.home() / ".cache" / "sparkk8s-test-uploads" / secrets.token_hex(4)
    path.mkdir(parents=True)
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REAL_SPARK_TIMINGS:
        terminalreporter.section("Real-node timings (seconds)")
        for name, seconds in REAL_SPARK_TIMINGS.items():
            terminalreporter.write_line(f"{name:<60} {seconds:7.1f}")
