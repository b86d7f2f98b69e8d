"""The operator's uploads on the in-memory pod API: relative paths against the DAG folder,
uploads before the first request, removal with the driver (or kept), removal after a failed
submission, an S3 connection through `upload_conn_id` against a real S3 server, and the
OpenLineage injection."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import SubmissionError
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from testenv.fakes import FakeCluster, FakeTaskInstance, driver_status
from tests.operators.test_operator_flow import context, progress

API_KEY = "ol-api-key-" + secrets.token_hex(6)


@pytest.fixture
def dag_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "dags"
    (folder / "jobs").mkdir(parents=True)
    (folder / "jobs" / "etl.py").write_text("from helpers import run\nrun()\n")
    (folder / "jobs" / "helpers.py").write_text("def run():\n    print('etl')\n")
    return folder


def operator_in_dag(dag_folder: Path, **overrides: Any) -> SparkK8sSubmitOperator:
    from airflow.sdk import DAG

    params: dict[str, Any] = {
        "task_id": "etl",
        "application": "jobs/etl.py",  # next to the DAG file
        "py_files": "jobs/helpers.py",
        "image": "apache/spark:4.3.0",
        "deferrable": False,
        "poll_interval": 0.01,
        "startup_timeout": 10,
        "on_finish_action": "delete_pod",
        **overrides,
    }
    with DAG("uploads_dag", schedule=None) as dag:
        operator = SparkK8sSubmitOperator(**params)
    dag.fileloc = str(dag_folder / "uploads_dag.py")
    return operator


def properties(cluster: FakeCluster) -> dict[str, str]:
    applied = next(a["content"] for a in cluster.applied if "configmaps" in a["path"])
    return load_java_properties(json.loads(applied)["data"]["spark.properties"])


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_relative_paths_upload_before_the_first_request_and_go_with_the_driver(
    cluster, dag_folder, tmp_path
):
    up = tmp_path / "up"
    seen_at_create: list[list[str]] = []
    created: list[dict] = []

    def look(c: FakeCluster, pod: dict) -> None:
        seen_at_create.append(files_under(up))
        created.append(pod)

    cluster.before_create = look
    cluster.on_list = progress(driver_status("finished"))
    operator = operator_in_dag(
        dag_folder, conf={"spark.kubernetes.file.upload.path": f"file://{up}"}
    )
    result = operator.execute(context())
    assert result["state"] == "succeeded"
    assert sorted(name.rsplit("/", 1)[1] for name in seen_at_create[0]) == ["etl.py", "helpers.py"]
    main = created[0]["spec"]["containers"][-1]["args"][-1]
    assert main.startswith(f"file://{up}/spark-upload-") and main.endswith("/etl.py")
    assert properties(cluster)["spark.submit.pyFiles"].endswith("/helpers.py")
    assert files_under(up) == []  # on_finish_action deleted the driver, and its files


def test_keep_uploaded_files(cluster, dag_folder, tmp_path):
    up = tmp_path / "up"
    cluster.on_list = progress(driver_status("finished"))
    operator = operator_in_dag(
        dag_folder,
        conf={"spark.kubernetes.file.upload.path": f"file://{up}"},
        keep_uploaded_files=True,
    )
    operator.execute(context())
    assert len(files_under(up)) == 2


def test_failed_submission_removes_the_uploads(cluster, dag_folder, tmp_path):
    up = tmp_path / "up"

    def refuse(c: FakeCluster, pod: dict) -> None:
        from airflow_provider_sparkk8s.errors import KubeApiError

        raise KubeApiError(403, "Forbidden", "no pods for you", method="POST", path="pods")

    cluster.before_create = refuse
    operator = operator_in_dag(
        dag_folder, conf={"spark.kubernetes.file.upload.path": f"file://{up}"}
    )
    with pytest.raises(SubmissionError):
        operator.execute(context())
    assert files_under(up) == [] and cluster.pods == {}


def s3_uploads_connection(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `s3_uploads` Airflow connection (aws) to the test's S3 server."""
    connection = {
        "conn_type": "aws",
        "login": s3_server.access_key,
        "password": s3_server.secret_key,
        "extra": {"endpoint_url": s3_server.endpoint},
    }
    monkeypatch.setenv("AIRFLOW_CONN_S3_UPLOADS", json.dumps(connection))


def test_upload_conn_id_with_a_real_s3_server(cluster, dag_folder, s3_server, monkeypatch):
    bucket = s3_server.make_bucket("op-" + secrets.token_hex(3))
    s3_uploads_connection(s3_server, monkeypatch)
    cluster.on_list = progress(driver_status("finished"))
    ti = FakeTaskInstance(task_id="etl")
    operator = operator_in_dag(
        dag_folder,
        conf={"spark.kubernetes.file.upload.path": f"s3a://{bucket}/uploads"},
        upload_conn_id="s3_uploads",
        on_finish_action="keep_pod",
    )
    result = operator.execute(context(ti))
    stored = s3_server.objects(bucket)
    assert sorted(key.rsplit("/", 1)[1] for key in stored) == ["etl.py", "helpers.py"]
    assert (
        stored[next(k for k in stored if k.endswith("etl.py"))]
        == (dag_folder / "jobs" / "etl.py").read_bytes()
    )
    pod = next(iter(cluster.pods.values()))
    assert pod["spec"]["containers"][-1]["args"][-1].startswith(f"s3a://{bucket}/uploads/")
    assert s3_server.secret_key not in json.dumps(
        [result, ti.xcom, cluster.applied, pod], default=_text
    )


def test_failed_submission_leaves_no_object_in_s3(cluster, dag_folder, s3_server, monkeypatch):
    """The refused driver's uploads are removed through the same connection they went by,
    and the error names neither credential."""
    bucket = s3_server.make_bucket("opfail-" + secrets.token_hex(3))
    s3_uploads_connection(s3_server, monkeypatch)
    uploaded_at_create: list[dict[str, bytes]] = []

    def refuse(c: FakeCluster, pod: dict) -> None:
        from airflow_provider_sparkk8s.errors import KubeApiError

        uploaded_at_create.append(s3_server.objects(bucket))
        raise KubeApiError(403, "Forbidden", "no pods for you", method="POST", path="pods")

    cluster.before_create = refuse
    operator = operator_in_dag(
        dag_folder,
        conf={"spark.kubernetes.file.upload.path": f"s3a://{bucket}/uploads"},
        upload_conn_id="s3_uploads",
    )
    with pytest.raises(SubmissionError) as error:
        operator.execute(context())
    assert len(uploaded_at_create[0]) == 2  # both files were there when the pod was sent
    assert s3_server.objects(bucket) == {} and cluster.pods == {}
    assert s3_server.secret_key not in str(error.value)


def test_openlineage_parent_and_transport_reach_the_drivers_properties(
    cluster, dag_folder, monkeypatch, caplog
):
    transport = {
        "type": "http",
        "url": "http://127.0.0.1:5000",
        "endpoint": "api/v1/lineage",
        "auth": {"type": "api_key", "apiKey": API_KEY},
    }
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps(transport))
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__NAMESPACE", "team-ns")
    from airflow.providers.openlineage.plugins import listener

    monkeypatch.setattr(listener, "_openlineage_listener", None, raising=False)
    from airflow_provider_sparkk8s.operators import openlineage

    seen: dict[str, Any] = {}

    def parent_info(properties: dict, ctx: Any) -> dict:
        seen["context"] = ctx
        return {**properties, "spark.openlineage.parentJobName": "uploads_dag.etl"}

    helpers = openlineage.openlineage_spark()
    assert helpers is not None
    monkeypatch.setattr(helpers, "inject_parent_job_information_into_spark_properties", parent_info)
    cluster.on_list = progress(driver_status("finished"))
    operator = operator_in_dag(
        dag_folder,
        application="local:///opt/app/etl.py",
        py_files=None,
        openlineage_inject_parent_job_info=True,
        openlineage_inject_transport_info=True,
    )
    operator.execute(context())
    props = properties(cluster)
    assert props["spark.openlineage.parentJobName"] == "uploads_dag.etl"
    assert props["spark.openlineage.transport.type"] == "http"
    assert props["spark.openlineage.transport.url"] == "http://127.0.0.1:5000"
    assert props["spark.openlineage.transport.auth.apiKey"] == f"Bearer {API_KEY}"
    assert "ti" in seen["context"]


def test_without_the_switches_nothing_is_injected(cluster, dag_folder):
    cluster.on_list = progress(driver_status("finished"))
    operator = operator_in_dag(dag_folder, application="local:///opt/app/etl.py", py_files=None)
    assert operator.lineage.openlineage_inject_parent_job_info is False
    operator.execute(context())
    assert not [k for k in properties(cluster) if k.startswith("spark.openlineage")]


def test_dry_run_masks_the_openlineage_api_key_and_uploads_nothing(
    cluster, dag_folder, tmp_path, monkeypatch, capfd
):
    transport = {
        "type": "http",
        "url": "http://127.0.0.1:5000",
        "auth": {"type": "api_key", "apiKey": API_KEY},
    }
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps(transport))
    up = tmp_path / "up"
    operator = operator_in_dag(
        dag_folder,
        conf={"spark.kubernetes.file.upload.path": f"file://{up}"},
        openlineage_inject_transport_info=True,
        dry_run=True,
    )
    result = operator.execute(context())
    text = "".join(capfd.readouterr())
    assert result["dry_run"] is True and cluster.requests == []
    assert (
        API_KEY not in text
        and "spark.openlineage.transport.auth.apiKey=*********(redacted)" in text
    )
    assert "would upload" in text and not up.exists()


def test_a_retry_that_adopts_the_driver_still_removes_its_uploads(cluster, dag_folder, tmp_path):
    from airflow.sdk.exceptions import TaskDeferred

    up = tmp_path / "up"
    conf = {"spark.kubernetes.file.upload.path": f"file://{up}"}
    with pytest.raises(TaskDeferred):  # the first try submits, uploads, then defers
        operator_in_dag(dag_folder, conf=conf, deferrable=True).execute(
            context(FakeTaskInstance(task_id="etl"))
        )
    assert len(files_under(up)) == 2
    first_pods = set(cluster.pods)
    # The worker died; the retry finds the live driver and adopts it instead of submitting.
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    retry = operator_in_dag(dag_folder, conf=conf)
    result = retry.execute(context(FakeTaskInstance(task_id="etl", try_number=2)))
    assert result["state"] == "succeeded" and result["driver_pod"] == first_pods.pop()[1]
    assert files_under(up) == []


def test_upload_folders_read_back_from_the_drivers_properties():
    from airflow_provider_sparkk8s.submission.upload_plan import uploaded_dirs_in

    uuid_a = "spark-upload-0b8f6c1e-9d2a-4c3e-8f1a-2b3c4d5e6f70"
    uuid_b = "spark-upload-1c9a7d2f-0e3b-4d4f-9a2b-3c4d5e6f7081"
    properties = {
        "spark.kubernetes.file.upload.path": "file:///shared/up",
        "spark.submit.pyFiles": f"file:///shared/up/{uuid_a}/h.py,local:///x.py",
        "spark.archives": f"file:/shared/up/{uuid_b}/env.zip#env",
    }
    main = f"file:///shared/up/{uuid_a}/etl.py"
    assert uploaded_dirs_in(properties, main) == (
        f"file:///shared/up/{uuid_b}",  # spark.archives comes before spark.submit.pyFiles
        f"file:///shared/up/{uuid_a}",
    )
    assert uploaded_dirs_in({"spark.submit.pyFiles": "x"}, None) == ()


def test_without_the_openlineage_provider_nothing_changes_and_nothing_fails(monkeypatch):
    from airflow_provider_sparkk8s.operators import openlineage

    monkeypatch.setattr(openlineage, "openlineage_conf", lambda: None)
    monkeypatch.setattr(openlineage, "openlineage_spark", lambda: None)
    assert openlineage.default_switches() == (False, False)
    conf = {"spark.app.name": "x"}
    assert openlineage.inject(conf, {}, parent_job=True, transport=True) == conf


def _text(value: object) -> str:
    """Request bodies are bytes (UTF-8 JSON, as sent): searched as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


# ------------------------------------------------------------------ every deletion takes the uploads


def deferred_with_uploads(dag_folder, up, ti, **overrides):  # type: ignore[no-untyped-def]
    """Submit (uploading to `up`) and defer; the TaskDeferred raised, and the operator."""
    from airflow.sdk.exceptions import TaskDeferred

    conf = {"spark.kubernetes.file.upload.path": f"file://{up}"}
    operator = operator_in_dag(dag_folder, conf=conf, deferrable=True, **overrides)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context(ti))
    return operator, deferred.value


def test_execution_timeout_travels_into_the_deferral_minus_what_the_try_spent(
    cluster, dag_folder, tmp_path
):
    from datetime import UTC, datetime, timedelta

    ti = FakeTaskInstance(task_id="etl")
    ti.start_date = datetime.now(UTC) - timedelta(minutes=20)  # type: ignore[attr-defined]
    _, deferred = deferred_with_uploads(
        dag_folder, tmp_path / "up", ti, execution_timeout=timedelta(hours=1)
    )
    assert timedelta(minutes=39) < deferred.timeout <= timedelta(minutes=40)
    _, without = deferred_with_uploads(
        dag_folder, tmp_path / "up2", FakeTaskInstance(task_id="etl", try_number=2)
    )
    assert without.timeout is None


def test_a_deferral_timeout_deletes_the_driver_and_its_uploads_and_names_them(
    cluster, dag_folder, tmp_path
):
    from datetime import timedelta

    from airflow_provider_sparkk8s.version_compat import TaskDeferralTimeout

    up = tmp_path / "up"
    ti = FakeTaskInstance(task_id="etl")
    operator, _ = deferred_with_uploads(dag_folder, up, ti, execution_timeout=timedelta(hours=1))
    (pod,) = [name for _, name in cluster.pods]
    assert len(files_under(up)) == 2
    # What Airflow's scheduler sends when the deferral's timeout passes (3.0 to 3.3).
    with pytest.raises(TaskDeferralTimeout) as timed_out:
        operator.resume_execution("__fail__", {"error": "Trigger timeout"}, context(ti))
    message = str(timed_out.value)
    assert "execution_timeout=3600s" in message and f"team-a:{pod}" in message
    assert "ran for " in message and "an unknown time" not in message
    assert cluster.pods == {} and files_under(up) == []
    assert ti.xcom["spark_application"]["reason"] == "ExecutionTimeout"


def test_on_kill_in_the_worker_deletes_the_driver_and_its_uploads(cluster, dag_folder, tmp_path):
    """What Airflow's execution_timeout does in a worker: the signal, then on_kill (issue 29:
    the folder stayed)."""
    up = tmp_path / "up"
    operator, _ = deferred_with_uploads(dag_folder, up, FakeTaskInstance(task_id="etl"))
    assert len(files_under(up)) == 2 and cluster.pods
    operator.on_kill()
    assert cluster.pods == {} and files_under(up) == []


def test_a_retry_that_replaces_a_live_driver_removes_its_uploads(cluster, dag_folder, tmp_path):
    up = tmp_path / "up"
    deferred_with_uploads(dag_folder, up, FakeTaskInstance(task_id="etl"))
    first = set(cluster.pods)
    first_uploads = {p.split("/")[0] for p in files_under(up)}
    # reattach_on_restart=False: the retry deletes the live driver and submits again.
    cluster.on_list = progress(driver_status("finished"), only="-2-driver")
    retry = operator_in_dag(
        dag_folder,
        conf={"spark.kubernetes.file.upload.path": f"file://{up}"},
        reattach_on_restart=False,
        on_finish_action="keep_pod",
    )
    retry.execute(context(FakeTaskInstance(task_id="etl", try_number=2)))
    assert not first & set(cluster.pods)
    left = {p.split("/")[0] for p in files_under(up)}
    assert left and not left & first_uploads  # the second submission's files stay (kept pod)
