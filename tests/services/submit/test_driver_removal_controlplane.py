"""Every path that deletes a driver takes its uploads along: real API server (KWOK runs the
pods), real S3 server (versitygw), the operator, trigger, sensor and clean-up operator as
Airflow would call them. Each test submits one real driver with the operator (its files
uploaded to S3), then deletes it one way, and checks that the pod, its ConfigMaps and its
`spark-upload-<uuid>/` folders are all gone. The compat venvs (tests/compat/suite.txt) have
no s3fs: there the same tests upload to a `file://` folder.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.operators.driver_cleanup import SparkK8sDriverCleanupOperator
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from airflow_provider_sparkk8s.version_compat import (
    AirflowSensorTimeout,
    TaskDeferralTimeout,
    TaskDeferred,
)
from testenv.fakes import FakeTaskInstance
from testenv.harness.kube import request
from testenv.harness.pods import get_pod, wait_for_pod_gone
from testenv.harness.waiting import wait_for
from testenv.s3server import S3Server
from tests.support.kills import answered
from tests.triggers.spark_pods import connection_for

pytestmark = pytest.mark.controlplane

S3A = "spark.hadoop.fs.s3a."
TIMED_OUT = ("__fail__", {"error": "Trigger timeout"})  # what Airflow's scheduler resumes with


def s3a_conf(s3: S3Server) -> dict[str, str]:
    return {
        S3A + "endpoint": s3.endpoint,
        S3A + "access.key": s3.access_key,
        S3A + "secret.key": s3.secret_key,
        S3A + "path.style.access": "true",
    }


@pytest.fixture
def job(tmp_path: Path) -> Path:
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "etl.py").write_text("print('etl')\n")
    (folder / "words.txt").write_text("uploaded\n")
    return folder


@pytest.fixture
def conn_id(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return connection_for(monkeypatch, kubeconfig)


class UploadStore:
    """Where the uploads go: a bucket of the real S3 server, or a local folder."""

    def __init__(self, s3: S3Server | None, root: Path) -> None:
        self.s3, self.root = s3, root
        self.secret = s3.secret_key if s3 else None
        if s3 is not None:
            self.bucket = s3.make_bucket("rm-" + secrets.token_hex(3))
            self.conf = {"spark.kubernetes.file.upload.path": f"s3a://{self.bucket}/uploads"}
            self.conf.update(s3a_conf(s3))
        else:
            self.conf = {"spark.kubernetes.file.upload.path": f"file://{root}/uploads"}

    def folders(self) -> set[str]:
        if self.s3 is not None:
            return {key.split("/")[1] for key in self.s3.objects(self.bucket)}
        uploads = self.root / "uploads"
        return (
            {p.name for p in uploads.iterdir() if any(p.iterdir())} if uploads.exists() else set()
        )


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> UploadStore:
    import importlib.util

    if importlib.util.find_spec("s3fs") is None:
        return UploadStore(None, tmp_path)
    return UploadStore(request.getfixturevalue("s3_server"), tmp_path)


def submit_and_defer(
    job: Path, conn_id: str, store: UploadStore, ti: FakeTaskInstance, **overrides: Any
) -> tuple[SparkK8sSubmitOperator, TaskDeferred]:
    """The operator's first half, as a worker runs it: upload, submit, defer."""
    from airflow.sdk import DAG

    params: dict[str, Any] = {
        "task_id": ti.task_id,
        "application": "etl.py",
        "files": "words.txt",
        "image": "apache/spark:4.3.0",
        "kubernetes_conn_id": conn_id,
        "deferrable": True,
        "conf": store.conf,
        **overrides,
    }
    with DAG(ti.dag_id, schedule=None) as dag:
        operator = SparkK8sSubmitOperator(**params)
    dag.fileloc = str(job / "dag.py")
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    return operator, deferred.value


def assert_all_gone(kube_admin: Any, namespace: str, pod: str, store: UploadStore) -> None:
    wait_for_pod_gone(kube_admin, namespace, pod)
    assert store.folders() == set()
    # The garbage collector takes the driver's ConfigMaps (owned by the pod).
    wait_for(
        lambda: (
            (
                [
                    c["metadata"]["name"]
                    for c in request(
                        kube_admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps"
                    )["items"]
                    if c["metadata"]["name"] != "kube-root-ca.crt"
                ]
                == []
            )
            or None
        ),
        60,
        "the driver's ConfigMaps to be collected",
    )


def submitted(kube_admin: Any, namespace: str, deferred: TaskDeferred, store: UploadStore) -> str:
    pod = deferred.trigger.driver_pod_name
    assert get_pod(kube_admin, namespace, pod) is not None
    folders = store.folders()
    # One folder per upload (the main file's, and `files`').
    assert len(folders) == 2 and all(f.startswith("spark-upload-") for f in folders), folders
    return str(pod)


def test_a_deferral_timeout_deletes_the_driver_and_its_uploads(
    job, conn_id, namespace, kube_admin, store
):
    ti = FakeTaskInstance(task_id="timed_out")
    operator, deferred = submit_and_defer(
        job, conn_id, store, ti, execution_timeout=timedelta(minutes=5)
    )
    assert timedelta(minutes=4) < deferred.timeout <= timedelta(minutes=5)
    pod = submitted(kube_admin, namespace, deferred, store)
    with pytest.raises(TaskDeferralTimeout) as raised:
        operator.resume_execution(*TIMED_OUT, {"ti": ti})
    assert f"{namespace}:{pod}" in str(raised.value) and "ran for " in str(raised.value)
    assert_all_gone(kube_admin, namespace, pod, store)


def test_on_kill_in_the_worker_deletes_the_driver_and_its_uploads(
    job, conn_id, namespace, kube_admin, store
):
    """What execution_timeout does while the worker waits: its signal, then on_kill."""
    operator, deferred = submit_and_defer(job, conn_id, store, FakeTaskInstance(task_id="killed"))
    pod = submitted(kube_admin, namespace, deferred, store)
    operator.on_kill()
    assert_all_gone(kube_admin, namespace, pod, store)


def test_the_triggers_kill_reads_the_uploads_from_the_configmap_and_removes_them(
    job, conn_id, namespace, kube_admin, store, monkeypatch
):
    """The trigger knows no conf: the folders come from the driver's spark.properties, and
    the storage is reached through upload_conn_id (S3), or the properties' path (file://)."""
    overrides: dict[str, Any] = {}
    if store.s3 is not None:
        connection = {
            "conn_type": "aws",
            "login": store.s3.access_key,
            "password": store.s3.secret_key,
            "extra": {"endpoint_url": store.s3.endpoint},
        }
        monkeypatch.setenv("AIRFLOW_CONN_S3_UPLOADS", json.dumps(connection))
        overrides["upload_conn_id"] = "s3_uploads"
    _, deferred = submit_and_defer(
        job, conn_id, store, FakeTaskInstance(task_id="deferred_kill"), **overrides
    )
    pod = submitted(kube_admin, namespace, deferred, store)
    _, kwargs = deferred.trigger.serialize()
    assert kwargs["upload_conn_id"] == overrides.get("upload_conn_id")
    assert store.secret is None or store.secret not in json.dumps(kwargs)
    asyncio.run(answered(deferred.trigger).on_kill())
    assert_all_gone(kube_admin, namespace, pod, store)


def test_a_retry_that_replaces_a_live_driver_removes_its_uploads(
    job, conn_id, namespace, kube_admin, store
):
    _, first = submit_and_defer(job, conn_id, store, FakeTaskInstance(task_id="t"))
    pod = submitted(kube_admin, namespace, first, store)
    old = store.folders()
    _, second = submit_and_defer(
        job,
        conn_id,
        store,
        FakeTaskInstance(task_id="t", try_number=2),
        reattach_on_restart=False,
    )
    wait_for_pod_gone(kube_admin, namespace, pod)
    assert second.trigger.driver_pod_name != pod
    new = store.folders()  # only the second submission's
    assert len(new) == 2 and not new & old


def test_the_deferrable_sensors_timeout_with_delete_on_timeout(
    job, conn_id, namespace, kube_admin, store
):
    _, deferred = submit_and_defer(job, conn_id, store, FakeTaskInstance(task_id="sensed"))
    pod = submitted(kube_admin, namespace, deferred, store)
    kept = SparkK8sApplicationSensor(
        task_id="wait", driver_pod_name=pod, namespace=namespace, kubernetes_conn_id=conn_id
    )
    with pytest.raises(AirflowSensorTimeout) as raised:
        kept.resume_execution(*TIMED_OUT, {"ti": FakeTaskInstance(task_id="wait")})
    assert f"{namespace}:{pod}" in str(raised.value) and "left running" in str(raised.value)
    assert get_pod(kube_admin, namespace, pod) is not None
    sensor = SparkK8sApplicationSensor(
        task_id="wait",
        driver_pod_name=pod,
        namespace=namespace,
        kubernetes_conn_id=conn_id,
        delete_on_timeout=True,
    )
    with pytest.raises(AirflowSensorTimeout) as raised:
        sensor.resume_execution(*TIMED_OUT, {"ti": FakeTaskInstance(task_id="wait")})
    assert "was deleted" in str(raised.value)
    assert_all_gone(kube_admin, namespace, pod, store)


class FinishedTaskInstances:
    """The clean-up operator's two Task SDK questions: every task instance has failed."""

    def get_task_states(self, *, dag_id: str, task_ids: list[str], run_ids: list[str]) -> dict:
        return {run_id: dict.fromkeys(task_ids, "failed") for run_id in run_ids}

    def get_dr_count(self, *, dag_id: str) -> int:
        return 1


def test_the_leftover_clean_up_removes_the_uploads(job, conn_id, namespace, kube_admin, store):
    _, deferred = submit_and_defer(job, conn_id, store, FakeTaskInstance(task_id="left"))
    pod = submitted(kube_admin, namespace, deferred, store)
    cleanup = SparkK8sDriverCleanupOperator(
        task_id="cleanup", kubernetes_conn_id=conn_id, namespace=namespace
    )
    (line,) = cleanup.execute({"ti": FinishedTaskInstances()})
    assert pod in line
    assert_all_gone(kube_admin, namespace, pod, store)
