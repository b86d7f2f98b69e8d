"""A Spark Connect server on the node agent, set up and torn down by
SparkK8sConnectServerOperator as the documented submitter: pyspark 4.2.1's SparkConnectServer
in the driver pod with a real executor, reached with pyspark-client 4.2 from this process.

One server: deferred setup (the trigger run as the triggerer runs it) until the gRPC port
answers, `spark.range(10**6).count()` and a small join with their results checked, clients
with no token and a wrong token refused, teardown leaves no pod. A second server, with no
executors (dynamic allocation from 0) and a 15-second idle timeout, is never torn down and deletes itself."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane, free_port
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.runtime_image import image_name
from tests.support.real_spark import BASE_CONF, REAL_SPARK_TIMINGS, PodRecorder

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


def test_connect_server_serves_clients_refuses_strangers_and_leaves_nothing(
    monkeypatch, runtime_plane: ControlPlane, runtime_namespace: str, submitter: Path,
    runtime_admin: ApiClient,
):  # fmt: skip
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql import functions

    from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session
    from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator
    from tests.operators.fakes import FakeTaskInstance

    ns = runtime_namespace
    token = secrets.token_urlsafe(24)
    monkeypatch.setenv("AIRFLOW_DISABLE_GREENBACK_PORTAL", "true")
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_K8S_DEFAULT",
        json.dumps({"conn_type": "spark_k8s", "extra": {"kube_config_path": str(submitter)}}),
    )
    monkeypatch.setenv(
        "AIRFLOW_CONN_CONNECT_TOKEN", json.dumps({"conn_type": "spark_connect", "password": token})
    )
    # The node agent's pods share the host's network: a port of its own for the driver's UI,
    # so the status read cannot reach another Spark's UI bound to *:4040 on this machine.
    conf = {**BASE_CONF, "spark.executor.instances": "1", "spark.ui.port": str(free_port())}
    recorder = PodRecorder(runtime_plane, ns).start()
    ti = FakeTaskInstance(dag_id="connect", task_id="server")
    setup = SparkK8sConnectServerOperator(
        task_id="server", namespace=ns, image=image_name(SPARK), conf=conf,
        token_conn_id="connect_token", address="pod_ip", idle_timeout=600, max_lifetime=900,
    )  # fmt: skip
    started = time.monotonic()
    trigger_kwargs, published = _setup(setup, ti)
    REAL_SPARK_TIMINGS["Connect server: ready (setup)"] = time.monotonic() - started
    # The token is in neither the trigger's kwargs nor the XCom.
    assert token not in json.dumps(trigger_kwargs) and token not in json.dumps(published)
    assert published["url"].startswith("sc://127.") and published["url"].endswith(":15002")
    ti.xcom_push("return_value", published)
    driver = published["driver_pod"]
    assert _pods(runtime_admin, ns)  # the server's pods run
    # The ConfigMap holds a reference, the Secret the value (base64).
    config_maps = kube.request(runtime_admin, "GET", f"/api/v1/namespaces/{ns}/configmaps")
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
    REAL_SPARK_TIMINGS["Connect server: two client queries done"] = time.monotonic() - started
    executors = recorder.names("executor")
    assert len(executors) == 1, recorder.events  # the server's driver created its executor
    assert recorder.reached("executor", "Running") == executors

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
    recorder.stop()
    assert recorder.gone(driver)
    assert _pods(runtime_admin, ns) == []
    REAL_SPARK_TIMINGS["Connect server: torn down"] = time.monotonic() - started


def test_the_idle_timeout_ends_a_server_whose_teardown_never_ran(
    monkeypatch, runtime_plane: ControlPlane, runtime_namespace: str, submitter: Path,
    runtime_admin: ApiClient,
):  # fmt: skip
    from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator
    from tests.operators.fakes import FakeTaskInstance

    ns = runtime_namespace
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_K8S_DEFAULT",
        json.dumps({"conn_type": "spark_k8s", "extra": {"kube_config_path": str(submitter)}}),
    )
    # No executor (Spark refuses 0 fixed executors; dynamic allocation starts with none).
    conf = {
        **BASE_CONF,
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "0",
        # The watcher reads the jobs at the pod's address on this port. The node agent's pods
        # share the host's network: on 4040 it read another Spark's UI (an e2e driver's, in
        # the full run), whose jobs kept this idle server "active" or made it look gone.
        "spark.ui.port": str(free_port()),
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
    assert published["driver_pod"] in _pods(runtime_admin, ns)
    # No teardown: the watcher beside the driver deletes the pod, and its objects go with it.
    wait_for(lambda: _pods(runtime_admin, ns) == [], 180, "the idle server gone", interval=1)
    # A client task after that fails with the pod and why, not a gRPC connection error.
    from airflow_provider_sparkk8s.errors import ConnectServerUnavailable
    from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session

    with pytest.raises(ConnectServerUnavailable, match=published["driver_pod"] + ".* gone"):
        remote_session(published)
    REAL_SPARK_TIMINGS["Connect idle server: ready"] = ready
    REAL_SPARK_TIMINGS["Connect idle server: gone by its idle timeout"] = time.monotonic() - started
    wait_for(
        lambda: (
            not kube.request(runtime_admin, "GET", f"/api/v1/namespaces/{ns}/services")["items"]
        ),
        60,
        "the Service collected with its owner",
        interval=1,
    )
