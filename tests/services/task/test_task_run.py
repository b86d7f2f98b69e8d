"""The task run's phases on an in-memory pod API (testenv/fakes.py): what each phase
decides and records. The operator's whole flow over the same fakes is
tests/operators/test_operator_flow.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.task.task_parameters import Following, Uploads
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.task.task_run import TaskRun, recorded
from testenv.fakes import FakeClient, FakeCluster

LOG = logging.getLogger("sparkk8s.test.task_run")
REF = TaskInstanceRef("etl", "spark_pi", "manual__1")
APP = TrackedApplication(
    "spark-abc", "team-a", "pi-1-driver", "spark-kubernetes-driver", "2026-11-29T18:00:00Z"
)


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
