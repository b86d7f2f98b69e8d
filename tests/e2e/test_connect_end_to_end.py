"""The Connect server DAG (tests/e2e/e2e_dags/e2e_connect.py) through the real Airflow 3.3 on
the real node (`connect_airflow`: its worker and triggerer in the node's network namespace,
tests/e2e/conftest.py): the setup defers into the triggerer until the server's gRPC port answers, two PySpark tasks
in the LocalExecutor's worker (pyspark-client, no JVM) query it with the token from the
connection, and the teardown leaves no pod in the DAG's namespace. A server killed mid-DAG
fails the next client task with the pod and the reason; its teardown still runs."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import pytest

from testenv.airflow_stack import AirflowStack
from testenv.harness import kube
from testenv.real_spark import PodRecorder
from tests.e2e.e2e_stack import E2E_CONNECT_NAMESPACE, E2E_TIMINGS
from tests.e2e.test_airflow_end_to_end import (
    assert_deferred_then_resumed,
    messages,
    run_dag,
    task_instance,
    task_log,
    xcom,
)

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]
pytest.importorskip("pyspark.sql.connect.client", reason="needs pyspark-client (test extra)")


def test_connect_server_dag_setup_two_clients_teardown_leaves_nothing(
    connect_airflow: AirflowStack, real_plane: Any, real_admin: Any
) -> None:
    airflow = connect_airflow
    dag_id = "e2e_connect"
    token = secrets.token_urlsafe(24)
    airflow.put_connection("e2e_connect_token", "spark_connect", password=token)
    recorder = PodRecorder(real_plane, E2E_CONNECT_NAMESPACE).start()
    started = time.monotonic()
    with airflow.client() as client:
        run, lines = run_dag(airflow, client, dag_id, "connect_server", "Connect DAG", "success")
        recorder.stop()
        run_id = run["dag_run_id"]
        assert_deferred_then_resumed(lines, "Spark Connect server ready at sc://")
        for task_id in ("connect_server", "count_range", "small_join", "connect_teardown"):
            assert task_instance(client, dag_id, run_id, task_id)["state"] == "success", task_id
        published = xcom(client, dag_id, run_id, "connect_server")
        if isinstance(published, str):  # the REST API may hand the value back as JSON text
            published = json.loads(published)
        assert published["url"].startswith("sc://") and token not in json.dumps(published)
        assert token not in "\n".join(lines)
        assert int(xcom(client, dag_id, run_id, "count_range")) == 10**6
        joined = xcom(client, dag_id, run_id, "small_join")
        if isinstance(joined, str):
            joined = json.loads(joined)
        assert [list(row) for row in joined] == [[f"name-{k}", 10] for k in range(10)]
    assert recorder.reached("executor", "Running"), recorder.events  # real executors served
    left = kube.request(real_admin, "GET", f"/api/v1/namespaces/{E2E_CONNECT_NAMESPACE}/pods")
    assert left["items"] == []
    E2E_TIMINGS["Connect DAG: setup -> teardown done"] = time.monotonic() - started


def test_a_killed_server_fails_the_next_client_with_why_and_the_teardown_still_runs(
    connect_airflow: AirflowStack, real_admin: Any
) -> None:
    airflow = connect_airflow
    dag_id = "e2e_connect_killed"
    airflow.put_connection("e2e_connect_token", "spark_connect", password=secrets.token_urlsafe(24))
    started = time.monotonic()
    with airflow.client() as client:
        run, _ = run_dag(airflow, client, dag_id, "connect_server", "Connect killed", "failed")
        run_id = run["dag_run_id"]
        states = {
            task_id: task_instance(client, dag_id, run_id, task_id)["state"]
            for task_id in ("connect_server", "kill_server", "client_after_the_kill",
                            "connect_teardown")
        }  # fmt: skip
        assert states == {
            "connect_server": "success",
            "kill_server": "success",
            "client_after_the_kill": "failed",
            "connect_teardown": "success",
        }
        published = xcom(client, dag_id, run_id, "connect_server")
        if isinstance(published, str):
            published = json.loads(published)
        log = "\n".join(messages(task_log(client, dag_id, run_id, "client_after_the_kill")))
        assert "ConnectServerUnavailable" in log, log[-3000:]
        assert (
            f"{published['driver_pod']} ({published['url']}) is not serving: the driver pod is gone"
            in log
        )
    left = kube.request(real_admin, "GET", f"/api/v1/namespaces/{E2E_CONNECT_NAMESPACE}/pods")
    assert left["items"] == []
    E2E_TIMINGS["Connect killed DAG: setup -> teardown done"] = time.monotonic() - started
