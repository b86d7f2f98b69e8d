"""One real Airflow for every end-to-end and browser test in the session.

Its DAGs folder holds the repository's `dags/` and the e2e DAGs, each linked in, so a
failure of the provider-free probe DAG points at the stack and a failure of the Spark
DAGs points at the provider. When a collected test asks for `real_plane`, its
`spark_k8s_real` connection reaches the real node's plane (the real kubelet, containerd and
runc: tests/conftest.py's session node, the one tests/realnode uses) as the documented
submitter (docs/rbac.yaml), in namespaces of the tests' own; the drivers run as the
documented `spark` account. Every real-Spark e2e DAG runs there. The Connect DAGs
(tests/e2e/e2e_dags/e2e_connect.py) run on the same node from an Airflow of their own
(`connect_airflow`): their worker and triggerer dial the server pod's IP, which only the real
node's network namespace routes. The shared stack's `[metrics]` sends StatsD
(InfluxDB-style tags) to a real statsd_exporter (`stack_statsd`), as a deployment would, so
a test can read what the real triggerer and worker sent. It loads the Spark UI plugin and
holds testenv/airflow_dags/spark_ui_live.py, whose own connection
tests/e2e/test_spark_ui_airflow.py writes (it had an Airflow of its own: 69 s of set-up).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testenv.airflow_stack import AirflowStack, free_port, launch_stack
from testenv.controlplane import ControlPlane
from testenv.harness.kube import create_namespace
from testenv.real_spark import submitter_kubeconfig
from testenv.realnode.node import RealNode
from testenv.spark_ui_live import link_dag, plugin_environment
from testenv.statsd_exporter import StatsdExporter
from tests.e2e.e2e_dags.e2e_timeouts import NAMESPACE_OF as TIMEOUT_NAMESPACES
from tests.e2e.e2e_stack import (
    E2E_CONNECT_NAMESPACE,
    E2E_KILL_NAMESPACE,
    E2E_NAMESPACE,
    E2E_REAL_CONN,
    E2E_TIMINGS,
)

REPO = Path(__file__).resolve().parents[2]


# Every namespace of the DAGs that run on the real node, made with the submitter's RBAC.
REAL_NODE_NAMESPACES = (E2E_NAMESPACE, E2E_KILL_NAMESPACE, *TIMEOUT_NAMESPACES.values())
CONNECT_SPARK = "4.2.1"  # the image tests/e2e/e2e_dags/e2e_connect.py names


def asked_for(request: pytest.FixtureRequest, fixture: str) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in request.session.items)


def namespaces_and_submitter(plane: Any, namespaces: tuple[str, ...], kubeconfig: Path) -> Path:
    """Creates `namespaces` on `plane` and writes the documented submitter's kubeconfig
    (docs/rbac.yaml), bound in each of them; its context is the first."""
    for name in namespaces:
        create_namespace(plane, name)
    first, *also = namespaces
    return submitter_kubeconfig(plane, first, kubeconfig, also=tuple(also))


@pytest.fixture(scope="session")
def stack_statsd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StatsdExporter]:
    """Prometheus' statsd_exporter, which every component of the stack sends metrics to."""
    with StatsdExporter(tmp_path_factory.mktemp("statsd")) as exporter:
        yield exporter


def statsd_environment(exporter: StatsdExporter) -> dict[str, str]:
    """`[metrics]` as a deployment's airflow.cfg would say it (tests/support/statsd.py)."""
    return {
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(exporter.udp_port),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
        "AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED": "True",
    }


@pytest.fixture(scope="session")
def airflow(
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
    stack_statsd: StatsdExporter,
) -> Iterator[AirflowStack]:
    root = tmp_path_factory.mktemp("airflow")
    dags = root / "dags"
    dags.mkdir()
    (dags / "examples").symlink_to(REPO / "dags", target_is_directory=True)
    (dags / "e2e").symlink_to(REPO / "tests/e2e/e2e_dags", target_is_directory=True)
    link_dag(dags)  # tests/e2e/test_spark_ui_airflow.py's live UI
    started = time.monotonic()
    environment = {**statsd_environment(stack_statsd), **plugin_environment(root)}
    stack = launch_stack(root / "home", dags, extra_env=environment)
    try:
        # The planes start while Airflow's components boot, each only if a collected test
        # asks for it: the probe and the connection form need neither.
        connections = {}
        if asked_for(request, "real_plane"):
            real = request.getfixturevalue("real_plane")
            connections[E2E_REAL_CONN] = namespaces_and_submitter(
                real, REAL_NODE_NAMESPACES, root / "real-submitter.kubeconfig"
            )
        stack.wait_healthy(timeout=300)
        for conn_id, kubeconfig in connections.items():
            extra = {"kube_config_path": str(kubeconfig), "namespace": E2E_NAMESPACE}
            stack.put_connection(conn_id, "spark_k8s", extra=json.dumps(extra))
        E2E_TIMINGS["Airflow + control plane up (s)"] = time.monotonic() - started
        E2E_TIMINGS.update({f"Airflow {key}": value for key, value in stack.timings.items()})
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def connect_airflow(
    tmp_path_factory: pytest.TempPathFactory, real_node: RealNode, real_plane: ControlPlane
) -> Iterator[AirflowStack]:
    """An Airflow for the Connect DAGs alone, whose scheduler (so the LocalExecutor's
    workers) and triggerer run inside the real node's network namespace (`nsenter --net`):
    the setup's trigger and the client tasks dial the server pod's IP, as a worker in the
    cluster would, and only that namespace routes it. The api-server and the dag-processor
    stay on the host's loopback, where the test talks to them; the api-server's and the API
    server's loopback ports answer inside too (`RealNode.expose_host_port`). Not the shared
    stack: its components also send StatsD to a server on the host's loopback (UDP, which the
    node's forward does not carry). Its `spark_k8s_default` is the documented submitter in
    E2E_CONNECT_NAMESPACE on the real node's plane."""
    real_node.ensure_spark_image(CONNECT_SPARK)  # imported in the background, or now
    root = tmp_path_factory.mktemp("connect-airflow")
    dags = root / "dags"
    dags.mkdir()
    (dags / "e2e_connect.py").symlink_to(REPO / "tests/e2e/e2e_dags/e2e_connect.py")
    started = time.monotonic()
    port = free_port()
    for loopback in (port, int(real_plane.apiserver_address.rsplit(":", 1)[1])):
        real_node.expose_host_port(loopback)
    inside = ["nsenter", f"--net={real_node.netns_path}", "--"]
    stack = launch_stack(
        root / "home", dags, port=port, prefixes={"scheduler": inside, "triggerer": inside}
    )
    try:
        kubeconfig = namespaces_and_submitter(
            real_plane, (E2E_CONNECT_NAMESPACE,), root / "submitter.kubeconfig"
        )
        stack.wait_healthy(timeout=300)
        extra = {"kube_config_path": str(kubeconfig), "namespace": E2E_CONNECT_NAMESPACE}
        stack.put_connection("spark_k8s_default", "spark_k8s", extra=json.dumps(extra))
        E2E_TIMINGS["Connect Airflow up (s)"] = time.monotonic() - started
        yield stack
    finally:
        stack.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if E2E_TIMINGS:
        terminalreporter.section("Airflow end-to-end timings (seconds)")
        for name, seconds in E2E_TIMINGS.items():
            terminalreporter.write_line(f"{name:<50} {seconds:7.1f}")
