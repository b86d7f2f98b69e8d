"""The submission service (Spark's `Client.run` once, for the operator and the CLI): one clock,
one rule for the upload storage, the dry run, uploads removed when the send fails, and a 409
on a live pod adopted only when asked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.submission.driver_args import main_resource_of
from testenv.fakes import FakeClient, FakeCluster, driver_status

SECRET = "s3-secret-4b1d"


class Recorder:
    """A `Log` that keeps the formatted messages."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str, *args: Any) -> None:
        self.lines.append(msg % args)

    warning = info


def request(tmp_path: Path, *extra: str) -> submission.SubmissionRequest:
    (tmp_path / "job.py").write_text("print('job')\n")
    argv = [
        "--master", "k8s://https://192.0.2.1:6443", "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.1",
        "--conf", "spark.kubernetes.namespace=team-a",
        "--conf", f"spark.kubernetes.file.upload.path=file://{tmp_path}/up",
        "--conf", f"spark.hadoop.fs.s3a.secret.key={SECRET}",
        *extra, str(tmp_path / "job.py"),
    ]  # fmt: skip
    return submission.SubmissionRequest(argv, environ={"SPARK_USER": "alice"}, cwd=str(tmp_path))


def planned(tmp_path: Path, *extra: str) -> submission.Planned:
    arguments = submission.parse(request(tmp_path, *extra), clock_ms=lambda: 1_700_000_000_123)
    return submission.plan(arguments, spark_version="4.0.1", environ={"SPARK_USER": "alice"})


def uploaded(tmp_path: Path) -> list[str]:
    root = tmp_path / "up"
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_submit_time_comes_from_the_one_clock(tmp_path: Path) -> None:
    plan = planned(tmp_path)
    assert plan.rendered.system_properties["spark.app.submitTime"] == "1700000000123"


def test_the_upload_storage_is_built_from_the_rendered_properties(tmp_path: Path) -> None:
    plan = planned(tmp_path)
    seen: list[tuple[str | None, Mapping[str, str]]] = []

    def storage_for(upload_path: str | None, properties: Mapping[str, str]) -> Storage:
        seen.append((upload_path, properties))
        return Storage.from_spark_conf(properties)

    log = Recorder()
    sent = submission.submit(FakeClient(FakeCluster()), plan, storage_for, log)  # type: ignore[arg-type]
    ((upload_path, properties),) = seen
    assert upload_path == f"file://{tmp_path}/up"
    assert properties is plan.rendered.system_properties
    assert uploaded(tmp_path) == ["job.py"] and len(sent.uploaded_dirs) == 1
    assert sent.created[0].startswith("Pod/") and sent.adopted is None
    assert [line for line in log.lines if line.startswith("Uploaded ")]


def test_dry_run_masks_secrets_and_lists_the_uploads_it_would_make(tmp_path: Path) -> None:
    preview = submission.dry_run(planned(tmp_path))
    assert SECRET not in preview.yaml and "*********(redacted)" in preview.yaml
    assert [u.source for u in preview.uploads] == [str(tmp_path / "job.py")]
    assert uploaded(tmp_path) == []
    assert preview.objects[0]["kind"] == "Pod"


def test_a_failed_send_removes_the_uploads(tmp_path: Path) -> None:
    cluster = FakeCluster()

    def refuse(c: FakeCluster, pod: dict) -> None:
        raise KubeApiError(403, "Forbidden", "no", method="POST", path="pods")

    cluster.before_create = refuse
    with pytest.raises(SubmissionError, match="403"):
        submission.submit(
            FakeClient(cluster),  # type: ignore[arg-type]
            planned(tmp_path),
            lambda path, props: Storage.from_spark_conf(props),
            Recorder(),
        )
    assert uploaded(tmp_path) == [] and cluster.pods == {}


@pytest.mark.parametrize("adopt", [True, False])
def test_a_409_on_a_live_pod_is_adopted_only_when_asked(tmp_path: Path, adopt: bool) -> None:
    cluster = FakeCluster()

    def other_wins(c: FakeCluster, pod: dict) -> None:
        c.before_create = None
        labels = {**pod["metadata"]["labels"], "spark-app-selector": "spark-other"}
        metadata = {**pod["metadata"], "namespace": "team-a", "labels": labels}
        c.add_pod({**pod, "metadata": metadata, "status": driver_status("running")})

    cluster.before_create = other_wins
    log = Recorder()
    submit = lambda: submission.submit(  # noqa: E731
        FakeClient(cluster),  # type: ignore[arg-type]
        planned(tmp_path),
        lambda path, props: Storage.from_spark_conf(props),
        log,
        adopt_conflict=adopt,
    )
    if not adopt:
        with pytest.raises(SubmissionError, match="409"):
            submit()
    else:
        sent = submit()
        assert sent.adopted is not None and sent.app_id == "spark-other"
        assert sent.uploaded_dirs == () and "Another worker submitted" in log.lines[-1]
    assert uploaded(tmp_path) == []  # ours went either way


def test_the_main_resource_is_read_from_sparks_driver_args() -> None:
    args = ["driver", "--properties-file", "/opt/spark/conf/spark.properties",
            "--class", "org.example.Main", "s3a://b/app.jar", "--day", "1"]  # fmt: skip
    assert main_resource_of(args) == "s3a://b/app.jar"
    proxied = ["driver", "--proxy-user", "bob", *args[1:]]
    assert main_resource_of(proxied) == "s3a://b/app.jar"
    assert main_resource_of(["--from-template", *args]) == "s3a://b/app.jar"
    assert main_resource_of(["driver", "--class", "X"]) is None
    assert main_resource_of(["sleep", "3600"]) is None


def test_a_submission_request_never_shows_its_environment(tmp_path: Path) -> None:
    request = submission.SubmissionRequest(
        ["--master", "k8s://https://h:6443"], {"AIRFLOW_CONN_X": "t0ken-value"}, str(tmp_path)
    )
    assert "t0ken-value" not in repr(request)
