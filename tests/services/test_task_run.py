"""The task run's phases on an in-memory pod API (tests/operators/fakes.py): what each phase
decides and records. The operator's whole flow over the same fakes is
tests/operators/test_operator_flow.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.task_parameters import Following, Uploads
from airflow_provider_sparkk8s.application.tracked import TrackedApplication
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.services import task_run
from airflow_provider_sparkk8s.services.pods import DriverPods
from airflow_provider_sparkk8s.services.task_run import (
    RunRequest,
    TaskRun,
    prepare,
    read_summary,
    recorded,
)
from tests.operators.fakes import FakeClient, FakeCluster

LOG = logging.getLogger("sparkk8s.test.task_run")
REF = TaskInstanceRef("etl", "spark_pi", "manual__1")
APP = TrackedApplication(
    "spark-abc", "team-a", "pi-1-driver", "spark-kubernetes-driver", "2026-11-29T18:00:00Z"
)


def request(**given: Any) -> RunRequest:
    parameters = SubmitParameters(
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        name="spark_pi",
    )
    fields: dict[str, Any] = {
        "parameters": parameters,
        "master": "k8s://https://127.0.0.1:6443",
        "namespace": "team-a",
        "cwd": "/",
        "environ": {},
        "image": "apache/spark:3.5.1",
    }
    fields.update(given)
    return RunRequest(**fields)


def run(cluster: FakeCluster, removed: list[str] | None = None) -> TaskRun:
    def remove(dirs: Any, conf: Any) -> list[str]:
        (removed if removed is not None else []).extend(dirs)
        return []

    return TaskRun(
        DriverPods(FakeClient(cluster)),  # type: ignore[arg-type]
        Following(),
        Uploads(),
        uploads_conf={},
        storage_for=lambda path, conf: pytest.fail("nothing is uploaded here"),
        remove_uploads=remove,
        log=LOG,
    )


def test_the_spark_line_is_chosen_once_and_carried(caplog):
    caplog.set_level(logging.INFO, LOG.name)
    task = prepare(request(), REF, LOG)
    assert task.spark_version == "3.5.1" and task.kubernetes.spark_version == "3.5.1"
    assert [r.getMessage() for r in caplog.records] == [
        "The objects follow Spark 3.5.1 (from the image tag of apache/spark:3.5.1)"
    ]
    chosen = prepare(request(image="my/spark:latest", spark_version="4.0.1"), REF, LOG)
    assert chosen.spark_version == "4.0.1"


def test_the_operators_additions_come_in_one_place_and_the_authors_keys_win():
    from airflow_provider_sparkk8s.application.event_log import EventLogChoice
    from airflow_provider_sparkk8s.services.task_run import ConfAdditions, amended_conf

    additions = ConfAdditions(EventLogChoice("s3a://logs/events"), "/sparkk8s/ui/etl")
    given = SubmitParameters(conf={"spark.eventLog.dir": "/mine"})
    conf = amended_conf(request(parameters=given, additions=additions))
    assert conf == {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "/mine",
        "spark.ui.proxyBase": "/sparkk8s/ui/etl",
    }
    assert amended_conf(request(parameters=given)) == {"spark.eventLog.dir": "/mine"}


def test_the_memory_retrys_sizes_reach_the_parsed_conf():
    from airflow_provider_sparkk8s.application.memory_retry import DriverMemory

    task = prepare(request(), REF, LOG, DriverMemory(1536, 576))
    assert task.arguments.spark_conf["spark.driver.memory"] == "1536m"
    assert task.arguments.spark_conf["spark.driver.memoryOverhead"] == "576m"


def test_the_record_is_read_from_the_submitted_conf():
    submitted = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "s3a://logs/events",
        "spark.kubernetes.kueue.queueName": "team",
        "spark.kubernetes.kueue.queueTimeout": "30min",
    }
    app = recorded(APP, "3.5.1", submitted)
    assert (app.spark_version, app.event_log, app.queue_timeout) == ("3.5.1", True, 1800.0)
    assert recorded(APP, "4.0.1", {}).event_log is False


def test_the_run_summary_is_read_only_with_an_event_log_and_a_server(monkeypatch, caplog):
    caplog.set_level(logging.INFO, LOG.name)
    ended = {"status": "success", "state": "succeeded", "exit_code": 0}
    assert read_summary("http://history:18080", APP, ended, LOG, conn_id="c") is None
    logged = recorded(APP, "3.5.1", {"spark.eventLog.enabled": "true"})
    assert read_summary(None, logged, ended, LOG, conn_id="spark_a") is None
    assert "history_server_url on connection 'spark_a'" in caplog.text

    def unavailable(fetch: Any, app_id: str) -> Any:
        raise OSError("connection refused")

    monkeypatch.setattr(task_run, "read_run_summary", unavailable)
    assert read_summary("http://history:18080", logged, ended, LOG, conn_id="c") is None
    assert "No run summary of spark-abc: connection refused" in caplog.text


def test_a_resume_with_no_driver_fails_saying_why():
    with pytest.raises(ApplicationFailed, match="Task spark_pi: resumed without the trigger"):
        run(FakeCluster()).resume(None, REF, lambda: "team-a")


def test_execution_timeout_deletes_the_driver_and_its_uploads_and_says_so():
    cluster = FakeCluster()
    cluster.add_pod({"metadata": {"name": "pi-1-driver", "namespace": "team-a"}})
    removed: list[str] = []
    app = TrackedApplication(**{**APP.to_kwargs(), "uploaded_dirs": ("s3a://up/spark-upload-1",)})
    message, xcom = run(cluster, removed).fail_on_timeout(app, "execution_timeout=60s")
    assert message.startswith("execution_timeout=60s passed while deferred: Spark application")
    assert message.endswith("and was deleted")
    assert (xcom["status"], xcom["reason"], xcom["message"]) == (
        "failed",
        "ExecutionTimeout",
        message,
    )
    assert cluster.pods == {} and removed == ["s3a://up/spark-upload-1"]
