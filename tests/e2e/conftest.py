"""One real Airflow for every end-to-end and browser test in the session.

Its DAGs folder holds the repository's `dags/` and the e2e DAGs, each linked in, so a
failure of the provider-free probe DAG points at the stack and a failure of the Spark
DAGs points at the provider. When a collected test asks for `real_plane`, its
`spark_k8s_real` connection reaches the real node's plane (the real kubelet, containerd and
runc: tests/conftest.py's session node, the one tests/realnode uses) as the documented
submitter (docs/rbac.yaml), in namespaces of the tests' own; the drivers run as the
documented `spark` account. Every real-Spark e2e DAG runs there but the Connect ones
(tests/e2e/e2e_dags/e2e_connect.py): their worker dials the server pod's IP, which only the
real node's network namespace routes, so they stay on the node agent (`runtime_plane`,
connection `spark_k8s_default`), whose plane starts only when a collected test asks for it.
Its `[metrics]` sends StatsD
(InfluxDB-style tags) to a real statsd_exporter (`stack_statsd`), as a deployment would, so
a test can read what the real triggerer and worker sent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from testenv.harness.waiting import wait_for
from testenv.statsd_exporter import StatsdExporter
from tests.e2e.airflow_stack import (
    E2E_CONNECT_NAMESPACE,
    E2E_KILL_NAMESPACE,
    E2E_NAMESPACE,
    E2E_REAL_CONN,
    E2E_TIMEOUT_NAMESPACE,
    E2E_TIMINGS,
    AirflowStack,
    launch_stack,
)
from tests.support.real_spark import submitter_kubeconfig

REPO = Path(__file__).resolve().parents[2]


def create_namespace(plane: Any, name: str) -> None:
    api = k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))
    try:
        core = k8s_client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": name}})  # type: ignore[arg-type]
        # Pods are refused until the namespace's default service account exists.
        wait_for(
            lambda: (
                core.list_namespaced_service_account(
                    name, field_selector="metadata.name=default"
                ).items
            ),
            60,
            f"service account {name}/default",
        )
    finally:
        api.close()


# Every namespace of the DAGs that run on the real node, made with the submitter's RBAC.
REAL_NODE_NAMESPACES = (E2E_NAMESPACE, E2E_KILL_NAMESPACE, E2E_TIMEOUT_NAMESPACE)
# The node agent's (Connect's DAGs), and every other e2e namespace too, so that a DAG
# moved back to `spark_k8s_default` finds its namespace there.
AGENT_NAMESPACES = (E2E_NAMESPACE, E2E_CONNECT_NAMESPACE, E2E_KILL_NAMESPACE, E2E_TIMEOUT_NAMESPACE)


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
    started = time.monotonic()
    stack = launch_stack(root / "home", dags, extra_env=statsd_environment(stack_statsd))
    try:
        # The planes start while Airflow's components boot, each only if a collected test
        # asks for it: the probe and the connection form need neither.
        connections = {}
        if asked_for(request, "real_plane"):
            real = request.getfixturevalue("real_plane")
            connections[E2E_REAL_CONN] = namespaces_and_submitter(
                real, REAL_NODE_NAMESPACES, root / "real-submitter.kubeconfig"
            )
        if asked_for(request, "runtime_plane"):
            agent = request.getfixturevalue("runtime_plane")
            connections["spark_k8s_default"] = namespaces_and_submitter(
                agent, AGENT_NAMESPACES, root / "submitter.kubeconfig"
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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if E2E_TIMINGS:
        terminalreporter.section("Airflow end-to-end timings (seconds)")
        for name, seconds in E2E_TIMINGS.items():
            terminalreporter.write_line(f"{name:<50} {seconds:7.1f}")
