"""Shared fixtures: the real control plane (docs/testing.md, "Test control
plane contract"). Nothing starts until a test asks for `control_plane` or a
fixture built on it."""

from __future__ import annotations

import re
import secrets
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from testenv.azurite import Azurite
from testenv.controlplane import ControlPlane
from testenv.gcsserver import GcsServer
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import submitter_kubeconfig
from testenv.realnode.node import RealNode
from testenv.s3server import S3Server
from testenv.toxiproxy import Proxy, Toxiproxy

# `--tier=check` (make check: the tests that need no server) and the time block at the end;
# pytester for the tests of those two plugins.
pytest_plugins = ("pytester", "tests.support.tiers", "tests.support.timing")

_started: list[ControlPlane] = []


def _session_plane(**options: Any) -> Iterator[ControlPlane]:
    # SIGTERM (e.g. from `timeout`) would end pytest without teardown; as an
    # interrupt it lets the control plane stop and its temp dir go.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    plane = ControlPlane(**options).start()
    _started.append(plane)
    try:
        yield plane
    finally:
        plane.stop()
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, controller manager, scheduler and KWOK, once per session.
    Binaries come from $SPARKK8S_TESTENV_BIN, else testenv/build.sh builds or reuses them."""
    yield from _session_plane()


@pytest.fixture(scope="session")
def real_node() -> Iterator[RealNode]:
    """The real node (testenv/realnode), started once the plane is (`real_plane` starts
    both): one a session, shared by tests/realnode and tests/e2e."""
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


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real S3-compatible server (versitygw) on loopback, once per session; binary from
    $SPARKK8S_S3_SERVER_BIN, else testenv/build_s3.sh builds or reuses it."""
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[GcsServer]:
    """A real GCS emulator (fake-gcs-server) on loopback, once per session; binary from
    $SPARKK8S_GCS_SERVER_BIN, else testenv/build_gcs.sh builds or reuses it."""
    with GcsServer() as server:
        yield server


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """A real Azure Blob emulator (Azurite's blob service) on loopback, once per session;
    from $SPARKK8S_AZURITE_BLOB_JS, else testenv/install_azurite.sh installs or reuses it."""
    with Azurite() as server:
        yield server


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _namespace_name(test_name: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"{stem or 't'}-{secrets.token_hex(3)}"


def _admin_client(plane: ControlPlane) -> k8s_client.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))


def _admin_session(plane: ControlPlane) -> Iterator[k8s_client.ApiClient]:
    api = _admin_client(plane)
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def kube_admin(control_plane: ControlPlane) -> Iterator[k8s_client.ApiClient]:
    """A `kubernetes` ApiClient with the admin certificate, for set-up and assertions."""
    yield from _admin_session(control_plane)


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace whose `default` service account exists (pods need it to
    pass the ServiceAccount admission plugin). Deleted after the test."""
    yield from _fresh_namespace(control_plane, request)


@pytest.fixture
def real_admin(real_plane: ControlPlane) -> Iterator[k8s_client.ApiClient]:
    """`kube_admin`, on the real node's plane (tests/realnode and tests/e2e)."""
    yield from _admin_session(real_plane)


@pytest.fixture
def real_namespace(real_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """`namespace`, on the real node's plane."""
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


def _fresh_namespace(plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    name = _namespace_name(request.node.name)
    api = _admin_client(plane)
    try:
        kube.request(api, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        wait_for(
            lambda: kube.exists(api, f"/api/v1/namespaces/{name}/serviceaccounts/default"),
            30,
            f"service account {name}/default",
        )
        yield name
    finally:
        try:
            kube.request(api, "DELETE", f"/api/v1/namespaces/{name}")
        except ApiException as error:
            if error.status != 404:
                raise
        api.close()


@pytest.fixture
def kubeconfig(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Path:
    """An admin kubeconfig file whose context namespace is `namespace`."""
    return control_plane.write_kubeconfig(tmp_path / "kubeconfig", namespace)


@pytest.fixture(scope="session")
def toxiproxy() -> Iterator[Toxiproxy]:
    """toxiproxy-server on loopback (testenv/build_toxiproxy.sh builds or reuses it)."""
    with Toxiproxy() as server:
        yield server


@pytest.fixture
def api_proxy(
    toxiproxy: Toxiproxy, control_plane: ControlPlane, request: pytest.FixtureRequest
) -> Iterator[Proxy]:
    """A fresh Toxiproxy proxy in front of kube-apiserver; removed (and its connections
    closed) after the test."""
    proxy = toxiproxy.proxy(_namespace_name(request.node.name), control_plane.apiserver_address)
    try:
        yield proxy
    finally:
        toxiproxy.delete(proxy)


@pytest.fixture
def proxied_kubeconfig(
    control_plane: ControlPlane, namespace: str, api_proxy: Proxy, tmp_path: Path
) -> Path:
    """An admin kubeconfig for `namespace` whose server is `api_proxy`."""
    return control_plane.write_kubeconfig(
        tmp_path / "proxied.kubeconfig", namespace, server=api_proxy.url
    )


# Tests that run DAGs in a real Airflow stack (testenv/airflow_stack.py): up to two reruns on
# AirflowDeferRace alone (Airflow's own stale defer-exit race, raised by AirflowStack.wait_run
# with the scheduler's line); any other failure fails at once, as before. tests/failover's
# stacks are its tests' own, so a rerun starts clean (a cold run on 2026-12-07 met the race
# there, on the cleared task's second try, before the module had reruns).
AIRFLOW_STACK_TESTS = ("tests/e2e/", "tests/failover/")
RERUN_ON_DEFER_RACE = pytest.mark.flaky(reruns=2, only_rerun=["AirflowDeferRace"])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(part in item.nodeid for part in AIRFLOW_STACK_TESTS):
            item.add_marker(RERUN_ON_DEFER_RACE)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for plane in _started:
        steps = ", ".join(f"{label} {seconds}s" for label, seconds in plane.timings.items())
        terminalreporter.write_line(
            f"control plane: started in {plane.startup_seconds:.1f}s ({steps})"
        )
