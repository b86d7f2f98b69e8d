"""The worker-free trigger's blocking phases on an in-memory pod API: the operator's start
(submit, adopt on a re-run), the rendered values checked before any request, the operator's
finish and the task's end."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.delivery import record_name
from airflow_provider_sparkk8s.application.task.task_end import (
    APPLICATION_XCOM_KEY,
    RETURN_VALUE_KEY,
    Tries,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.triggers import submit_run
from airflow_provider_sparkk8s.triggers.submit_run import SubmitRun, task_ref
from testenv.fakes import FakeCluster, FakeHook, FakeTaskInstance, driver_status

REF = TaskInstanceRef("etl", "spark_pi", "manual__1", clear_number=0)
PARAMETERS: dict[str, Any] = {
    "application": "local:///opt/spark/examples/jars/spark-examples.jar",
    "java_class": "org.apache.spark.examples.SparkPi",
    "image": "apache/spark:4.0.1",
    "spark_version": "4.0.1",
    "name": "spark_pi",
    "conf": {},
    "verbose": False,
}
RETRIES, NO_RETRIES = Tries(True, True), Tries(False, False)
FOLLOWING = {"startup_timeout": 10.0, "get_logs": False, "on_finish_action": "delete_pod"}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    cluster = FakeCluster()
    hook = FakeHook(cluster)
    monkeypatch.setattr(submit_run, "SparkK8sHook", lambda kubernetes_conn_id: hook)
    return cluster


def make_run(**parameters: Any) -> SubmitRun:
    return SubmitRun(
        "k8s",
        {**PARAMETERS, **parameters},
        FOLLOWING,
        {},
        {"run_summary": False},
        None,
        logging.getLogger("test"),
    )


def posts(cluster: FakeCluster) -> list[str]:
    return [path for method, path in cluster.requests if method == "POST"]


def final(app: Any, status: str, **fields: Any) -> dict[str, Any]:
    return {
        "status": status,
        "application_id": app.application_id,
        "namespace": app.namespace,
        "driver_pod": app.driver_pod,
        "state": "succeeded" if status == "success" else "failed",
        "exit_code": 0 if status == "success" else 1,
        "finished_at": "2026-11-29T18:00:31Z",
        **fields,
    }


def test_the_task_instance_comes_from_the_rendering_context_else_the_task_instance() -> None:
    class Run:
        clear_number = 3

    ti = FakeTaskInstance(try_number=2)
    assert task_ref({"ti": ti, "dag_run": Run()}, None).clear_number == 3
    assert task_ref(None, ti).try_number == 2
    with pytest.raises(RuntimeError, match="task instance"):
        task_ref(None, None)


def test_start_submits_once_and_a_rerun_adopts(cluster: FakeCluster) -> None:
    started = make_run().start(REF)
    assert len(posts(cluster)) == 1 and started.end is None
    assert started.app.namespace == "team-a" and started.app.driver_pod.endswith("-1-driver")
    again = make_run().start(REF)  # the triggerer restarted: the trigger runs again
    assert len(posts(cluster)) == 1
    assert again.app.driver_pod == started.app.driver_pod and again.app.adopted


def test_a_rendered_local_file_is_refused_before_any_request(cluster: FakeCluster) -> None:
    with pytest.raises(SparkConfError) as caught:
        make_run(application="/opt/airflow/dags/etl.py").start(REF)
    assert caught.value.key == "application"
    assert cluster.requests == []


def test_finish_ends_a_success_with_the_operators_xcoms(cluster: FakeCluster) -> None:
    run = make_run()
    started = run.start(REF)
    end = run.finish(started, final(started.app, "success"), REF, RETRIES)
    assert end.succeeded
    returned = end.xcoms[RETURN_VALUE_KEY]
    assert (returned["status"], returned["application_id"]) == (
        "success",
        started.app.application_id,
    )
    assert end.xcoms[APPLICATION_XCOM_KEY]["driver_pod"] == started.app.driver_pod
    assert cluster.pods == {}  # on_finish_action="delete_pod"
    # No result record: no worker's success callback would drop it.
    record = record_name(REF)
    assert not [path for _, path in cluster.requests if record in path]
    assert not [a for a in cluster.applied if record in a["path"]]


def test_finish_hands_an_application_error_to_a_worker_when_airflow_may_retry(
    cluster: FakeCluster,
) -> None:
    run = make_run()
    started = run.start(REF)
    event = final(started.app, "failed", reason="Error", message="ZeroDivisionError")
    end = run.finish(started, event, REF, RETRIES)
    assert not end.succeeded and end.in_worker
    assert end.failure["kind"] == "application_error"
    assert RETURN_VALUE_KEY not in end.xcoms
    last = run.finish(started, event, REF, NO_RETRIES)
    assert not last.in_worker  # no retries: TaskFailedEvent is final


def test_the_live_driver_of_the_task_instance_is_found_by_its_labels(
    cluster: FakeCluster,
) -> None:
    run = make_run()
    assert run.live_driver(REF) is None
    started = run.start(REF)
    pod = next(iter(cluster.pods.values()))
    pod["status"] = driver_status("running")
    found = run.live_driver(REF)
    assert found is not None and found.driver_pod == started.app.driver_pod
    pod["status"] = driver_status("finished")
    assert run.live_driver(REF) is None  # ended: nothing to kill
