"""A Spark Connect server on the real node, set up and torn down by
SparkK8sConnectServerOperator as the documented submitter: pyspark 4.2.1's SparkConnectServer
in the driver pod with a real executor, reached with pyspark-client 4.2 by the pod's address.

The operator, its trigger and the clients run in a fresh interpreter inside the node's
network namespace (`RealNode.call_inside`), where the pods' addresses route, as a worker in
the cluster would; this process watches the pods from outside.

One server: deferred setup (the trigger run as the triggerer runs it) until the gRPC port
answers, `spark.range(10**6).count()` and a small join with their results checked, clients
with no token and a wrong token refused, teardown leaves no pod. A second server, at the same time in a namespace of its own, with no
executors (dynamic allocation from 0) and a 15-second idle timeout, is never torn down and
deletes itself."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import config as k8s_config
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import (
    BASE_CONF,
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    PodRecorder,
    submitter_kubeconfig,
)
from testenv.realnode.node import RealNode
from testenv.runtime_image import image_name
from tests.conftest import _fresh_namespace

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]
pytest.importorskip("pyspark.sql.connect.client", reason="needs pyspark-client (test extra)")

SPARK = "4.2.1"  # the line of the pyspark-client in the test extra


def _pods(api: ApiClient, namespace: str) -> list[str]:
    listed = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    return [pod["metadata"]["name"] for pod in listed]


def _setup(operator, ti):
    """The setup task as Airflow runs it: execute, the trigger in an event loop, resume."""
    from airflow.sdk._shared.module_loading import import_string

    from airflow_provider_sparkk8s.version_compat import TaskDeferred

    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    classpath, kwargs = deferred.value.trigger.serialize()
    trigger = import_string(classpath)(**kwargs)  # rebuilt from its kwargs

    async def first_event():
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    event = asyncio.run(first_event())
    return kwargs, operator.execute_complete({"ti": ti}, event, **deferred.value.kwargs)


class _Lines(logging.Handler):
    """The status lines remote_session logs, kept on a logger of the test's own (Airflow's
    logging set-up does not pass records to pytest's caplog)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _status_logger() -> tuple[logging.Logger, _Lines]:
    log, kept = logging.getLogger("tests.connect_status"), _Lines()
    log.handlers, log.propagate = [kept], False
    log.setLevel(logging.INFO)
    return log, kept


def run_inside(
    scenario: Callable[..., tuple[dict[str, float], str]],
    real_node: RealNode,
    real_plane: ControlPlane,
    namespace: str,
    submitter: Path,
) -> str:
    """Runs `scenario` in a process inside the node's network namespace (where pod IPs
    route), with the API server's port reachable there; keeps its timings, returns its
    driver pod's name."""
    port = int(real_plane.apiserver_address.rsplit(":", 1)[1])
    timings, driver = real_node.call_inside(
        scenario,
        namespace, str(submitter), str(real_plane.admin_kubeconfig),
        host_ports=[port], timeout=540,
    )  # fmt: skip
    REAL_SPARK_TIMINGS.update(timings)
    return driver


@dataclass
class ServerRun:
    """One scenario's server, run in the node's network namespace."""

    namespace: str
    driver: str  # its driver pod's name
    recorder: PodRecorder  # the namespace's pods, watched from outside


def run_server(
    scenario: Callable[..., tuple[dict[str, float], str]],
    real_node: RealNode,
    real_plane: ControlPlane,
    namespace: str,
    submitter: Path,
) -> ServerRun:
    recorder = PodRecorder(real_plane, namespace).start()
    try:
        driver = run_inside(scenario, real_node, real_plane, namespace, submitter)
    finally:
        recorder.stop()
    return ServerRun(namespace, driver, recorder)


@pytest.fixture(scope="module")
def servers(
    real_node: RealNode,
    real_plane: ControlPlane,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Future[ServerRun]]]:
    """Both scenarios' servers at once, each in a namespace of its own: they share only the
    node, and each mostly waits (for its pods, its clients, its idle timeout)."""
    real_node.ensure_spark_image(SPARK)  # imported in the background, or now
    real_node.expose_host_port(int(real_plane.apiserver_address.rsplit(":", 1)[1]))
    scenarios = {
        "serve": _serve_clients_refuse_strangers_tear_down,
        "idle": _idle_server_ends_by_itself,
    }
    with ExitStack() as namespaces:
        given = {}
        for name in scenarios:
            ns = namespaces.enter_context(contextmanager(_fresh_namespace)(real_plane, request))
            kubeconfig = tmp_path_factory.mktemp(f"connect-{name}") / "submitter.kubeconfig"
            given[name] = (ns, submitter_kubeconfig(real_plane, ns, kubeconfig))
        with ThreadPoolExecutor(len(given)) as pool:
            yield {
                name: pool.submit(run_server, scenarios[name], real_node, real_plane, ns, kc)
                for name, (ns, kc) in given.items()
            }


def test_connect_server_serves_clients_refuses_strangers_and_leaves_nothing(
    servers: dict[str, Future[ServerRun]], real_admin: ApiClient
):
    run = servers["serve"].result()
    recorder, driver = run.recorder, run.driver
    executors = recorder.names("executor")
    assert len(executors) == 1, recorder.events  # the server's driver created its executor
    assert recorder.reached("executor", "Running") == executors
    assert recorder.gone(driver)
    assert _pods(real_admin, run.namespace) == []


def _serve_clients_refuse_strangers_tear_down(
    ns: str, submitter: str, admin_kubeconfig: str
) -> tuple[dict[str, float], str]:
    """In the node's network namespace: setup, clients, strangers, teardown; the timings and
    the driver pod's name back."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql import functions

    from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session
    from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator
    from testenv.fakes import FakeTaskInstance

    timings: dict[str, float] = {}
    admin = k8s_config.new_client_from_config(config_file=admin_kubeconfig)
    token = secrets.token_urlsafe(24)
    os.environ["AIRFLOW_DISABLE_GREENBACK_PORTAL"] = "true"
    os.environ["AIRFLOW_CONN_SPARK_K8S_DEFAULT"] = json.dumps(
        {"conn_type": "spark_k8s", "extra": {"kube_config_path": submitter}}
    )
    os.environ["AIRFLOW_CONN_CONNECT_TOKEN"] = json.dumps(
        {"conn_type": "spark_connect", "password": token}
    )
    conf = {**BASE_CONF, **SMALL_PODS, "spark.executor.instances": "1"}
    ti = FakeTaskInstance(dag_id="connect", task_id="server")
    setup = SparkK8sConnectServerOperator(
        task_id="server", namespace=ns, image=image_name(SPARK), conf=conf,
        token_conn_id="connect_token", address="pod_ip", idle_timeout=600, max_lifetime=900,
    )  # fmt: skip
    started = time.monotonic()
    trigger_kwargs, published = _setup(setup, ti)
    timings["Connect server: ready (setup)"] = time.monotonic() - started
    # The token is in neither the trigger's kwargs nor the XCom.
    assert token not in json.dumps(trigger_kwargs) and token not in json.dumps(published)
    driver = published["driver_pod"]
    pod = kube.request(admin, "GET", f"/api/v1/namespaces/{ns}/pods/{driver}")
    # The driver pod's own address on the real node's pod network.
    assert published["url"] == f"sc://{pod['status']['podIP']}:15002", published["url"]
    ti.xcom_push("return_value", published)
    assert _pods(admin, ns)  # the server's pods run
    # The ConfigMap holds a reference, the Secret the value (base64).
    config_maps = kube.request(admin, "GET", f"/api/v1/namespaces/{ns}/configmaps")
    assert token not in json.dumps(config_maps)

    spark = remote_session(published)
    try:
        assert spark.range(10**6).count() == 10**6
        left = spark.range(100).withColumn("k", functions.col("id") % 10)
        right = spark.createDataFrame([(k, f"name-{k}") for k in range(10)], ["k", "name"])
        joined = left.join(right, "k").groupBy("name").count().orderBy("name").collect()
        assert [(row["name"], row["count"]) for row in joined] == [
            (f"name-{k}", 10) for k in range(10)
        ]
        # The next client task's log: the server's executors, and this live session.
        status_log, kept = _status_logger()
        remote_session(published, log=status_log).stop()
        executor_line, sessions_line = kept.lines
        assert re.search(r": 1 executor: \S+-exec-1 \(Running\)$", executor_line), executor_line
        assert f"1 session(s) online: {spark.session_id} (" in sessions_line, sessions_line
        assert "0 request(s) running" in sessions_line, sessions_line
    finally:
        spark.stop()
    timings["Connect server: two client queries done"] = time.monotonic() - started

    for wrong in (None, "not-the-token"):
        stranger = dict(published, token_conn_id=None)
        session = remote_session(stranger, token=wrong)
        try:
            with pytest.raises(SparkConnectGrpcException) as refused:
                session.range(3).count()
        finally:
            # Closed now: an open client's exit handler would call the torn-down server
            # at interpreter exit, retrying with backoff, and hold the test session open.
            session.stop()
        assert "UNAUTHENTICATED" in str(refused.value), str(refused.value)[:500]
        assert session.client.is_closed

    teardown = SparkK8sConnectServerOperator(
        task_id="teardown", mode="teardown", server_task_id="server", namespace=ns
    )
    teardown.execute({"ti": ti})
    assert _pods(admin, ns) == []
    timings["Connect server: torn down"] = time.monotonic() - started
    admin.close()
    return timings, str(driver)


def test_the_idle_timeout_ends_a_server_whose_teardown_never_ran(
    servers: dict[str, Future[ServerRun]], real_admin: ApiClient
):
    run = servers["idle"].result()
    ns = run.namespace
    assert _pods(real_admin, ns) == [], run.driver
    wait_for(
        lambda: not kube.request(real_admin, "GET", f"/api/v1/namespaces/{ns}/services")["items"],
        60,
        "the Service collected with its owner",
        interval=1,
    )


def _idle_server_ends_by_itself(
    ns: str, submitter: str, admin_kubeconfig: str
) -> tuple[dict[str, float], str]:
    """In the node's network namespace: a server with no teardown, gone by its idle timeout,
    and a client after that refused with why; the timings and the driver pod's name back."""
    from airflow_provider_sparkk8s.errors import ConnectServerUnavailable
    from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session
    from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator
    from testenv.fakes import FakeTaskInstance

    admin = k8s_config.new_client_from_config(config_file=admin_kubeconfig)
    os.environ["AIRFLOW_CONN_SPARK_K8S_DEFAULT"] = json.dumps(
        {"conn_type": "spark_k8s", "extra": {"kube_config_path": submitter}}
    )
    # No executor (Spark refuses 0 fixed executors; dynamic allocation starts with none).
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "0",
    }
    del conf["spark.executor.instances"]
    setup = SparkK8sConnectServerOperator(
        task_id="server", namespace=ns, image=image_name(SPARK), conf=conf,
        allow_unauthenticated=True, address="pod_ip", idle_timeout=15, max_lifetime=600,
        deferrable=False, startup_timeout=180,
    )  # fmt: skip
    started = time.monotonic()
    published = setup.execute({"ti": FakeTaskInstance(dag_id="idle", task_id="server")})
    ready = time.monotonic() - started
    assert published["driver_pod"] in _pods(admin, ns)
    # No teardown: the watcher beside the driver deletes the pod, and its objects go with it.
    wait_for(lambda: _pods(admin, ns) == [], 180, "the idle server gone", interval=1)
    admin.close()
    # A client task after that fails with the pod and why, not a gRPC connection error.
    with pytest.raises(ConnectServerUnavailable, match=published["driver_pod"] + ".* gone"):
        remote_session(published)
    timings = {
        "Connect idle server: ready": ready,
        "Connect idle server: gone by its idle timeout": time.monotonic() - started,
    }
    return timings, str(published["driver_pod"])
