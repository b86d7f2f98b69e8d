"""The real node (testenv/realnode): a control plane whose only node is the real kubelet
v1.35.4 with containerd and runc, in namespaces this session makes and removes. Nothing
starts until a test asks for `real_plane`. The fixtures `real_node`, `real_plane`,
`real_namespace`, `real_submitter` and `real_shared_dir` are in tests/conftest.py, so every
lane's tests share their session's one node."""

from __future__ import annotations

import pytest

from testenv.real_spark import REAL_SPARK_TIMINGS
from tests.conftest import spark_lines_of

__all__ = ["spark_lines_of"]  # tests/realnode/test_realnode_config.py imports it from here


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REAL_SPARK_TIMINGS:
        terminalreporter.section("Real-node timings (seconds)")
        for name, seconds in REAL_SPARK_TIMINGS.items():
            terminalreporter.write_line(f"{name:<60} {seconds:7.1f}")
