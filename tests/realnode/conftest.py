"""The real node (testenv/realnode): a control plane whose only node is the real kubelet
v1.35.4 with containerd and runc, in namespaces this session makes and removes. Nothing
starts until a test asks for `real_plane`."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from testenv.controlplane import ControlPlane
from testenv.realnode.node import RealNode
from tests.conftest import _fresh_namespace, _interrupt
from tests.support.real_spark import REAL_SPARK_TIMINGS, submitter_kubeconfig


@pytest.fixture(scope="session")
def real_node() -> Iterator[RealNode]:
    """The node, started once the plane is (`real_plane` starts both)."""
    node = RealNode()
    try:
        yield node
    finally:
        node.stop()


def spark_lines_of(items: list[pytest.Item]) -> list[str]:
    """The Spark lines the session's real-node tests ask for (their `version` parameter),
    in the order they run, each once."""
    lines: list[str] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        version = callspec.params.get("version") if callspec else None
        uses_node = "real_node" in getattr(item, "fixturenames", ())
        if uses_node and isinstance(version, str) and version not in lines:
            lines.append(version)
    return lines


@pytest.fixture(scope="session")
def real_plane(real_node: RealNode, request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, controller manager and scheduler, no KWOK node: the real node
    is the only one. Its API server sends kubelet and pod traffic through the node's forward.
    Once the node is Ready, the images of the lines this session's tests run are imported in
    the background while the first tests run."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    plane = ControlPlane(node_count=0, cluster_egress_socket=real_node.paths.egress_socket)
    plane.start()
    try:
        real_node.start(plane)
        real_node.prefetch_spark_images(spark_lines_of(request.session.items))
        yield plane
    finally:
        real_node.stop()
        leftovers = real_node.leftovers()
        plane.stop()
        signal.signal(signal.SIGTERM, previous)
        assert not leftovers, f"the real node left behind: {leftovers}"


@pytest.fixture
def real_namespace(real_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    yield from _fresh_namespace(real_plane, request)


@pytest.fixture
def real_admin(real_plane: ControlPlane) -> Iterator[k8s_client.ApiClient]:
    api = k8s_config.new_client_from_config(config_file=str(real_plane.admin_kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def real_submitter(real_plane: ControlPlane, real_namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig for `real_namespace` as the documented submitter (docs/rbac.yaml)."""
    return submitter_kubeconfig(real_plane, real_namespace, tmp_path / "submitter.kubeconfig")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REAL_SPARK_TIMINGS:
        terminalreporter.section("Real-node timings (seconds)")
        for name, seconds in REAL_SPARK_TIMINGS.items():
            terminalreporter.write_line(f"{name:<60} {seconds:7.1f}")
