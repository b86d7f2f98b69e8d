"""sparkk8s-submit uploads local files before the first request, and removes them when the
submission fails; a dry run uploads nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import SubmissionError
from testenv.harness.recorder import InjectedFailure, RecordingServer


def files(tmp_path: Path) -> list[str]:
    (tmp_path / "job.py").write_text("print('job')\n")
    (tmp_path / "lib.py").write_text("X = 1\n")
    return [
        "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.0",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--conf", f"spark.kubernetes.file.upload.path=file://{tmp_path}/up",
        "--py-files", str(tmp_path / "lib.py"), str(tmp_path / "job.py"),
    ]  # fmt: skip


def uploaded(tmp_path: Path) -> list[str]:
    root = tmp_path / "up"
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_uploads_come_before_the_first_request(tmp_path: Path) -> None:
    with RecordingServer() as server:
        seen_at_first_request: list[list[str]] = []
        respond = server.respond

        def respond_after_looking(method, path, body):  # type: ignore[no-untyped-def]
            seen_at_first_request.append(uploaded(tmp_path))
            return respond(method, path, body)

        server.respond = respond_after_looking  # type: ignore[method-assign]
        err = io.StringIO()
        argv = ["--master", f"k8s://{server.url}", *files(tmp_path)]
        assert run(argv, environ={"HOME": str(tmp_path)}, out=io.StringIO(), err=err).exit_code == 0
    assert seen_at_first_request[0] == ["job.py", "lib.py"]
    assert "Uploaded" in err.getvalue()


def test_failed_submission_removes_the_uploads(tmp_path: Path) -> None:
    with RecordingServer() as server:
        server.fail(InjectedFailure("PATCH", "configmaps", 403))
        argv = ["--master", f"k8s://{server.url}", *files(tmp_path)]
        with pytest.raises(SubmissionError):
            run(argv, environ={"HOME": str(tmp_path)}, out=io.StringIO(), err=io.StringIO())
    assert uploaded(tmp_path) == []
    assert list((tmp_path / "up").iterdir()) == []  # the spark-upload-<uuid> folders too


def test_dry_run_uploads_nothing_and_says_what_it_would(tmp_path: Path) -> None:
    err = io.StringIO()
    argv = ["--dry-run", "--master", "k8s://https://192.0.2.1:6443", *files(tmp_path)]
    assert run(argv, environ={}, out=io.StringIO(), err=err).exit_code == 0
    assert uploaded(tmp_path) == [] and err.getvalue().count("Would upload") == 2


def test_a_local_upload_path_warns_that_the_driver_must_mount_it(tmp_path: Path) -> None:
    """Papercut 8 (issue 29): the upload path under the temp folder works here and fails only
    in the driver, whose /tmp is its own; the warning comes at upload time, with the upload."""
    mounted = [
        "--conf", "spark.kubernetes.driver.volumes.hostPath.up.mount.path=" + str(tmp_path),
        "--conf", "spark.kubernetes.driver.volumes.hostPath.up.options.path=" + str(tmp_path),
    ]  # fmt: skip
    with RecordingServer() as server:
        argv = ["--master", f"k8s://{server.url}", *files(tmp_path)]
        err = io.StringIO()
        assert run(argv, environ={"HOME": str(tmp_path)}, out=io.StringIO(), err=err).exit_code == 0
        quiet = io.StringIO()
        argv = ["--master", f"k8s://{server.url}", *mounted, *files(tmp_path)]
        assert (
            run(argv, environ={"HOME": str(tmp_path)}, out=io.StringIO(), err=quiet).exit_code == 0
        )
    said = err.getvalue()
    assert (
        f"spark.kubernetes.file.upload.path=file://{tmp_path}/up is a path on this machine" in said
    )
    assert "must be storage mounted in the driver" in said
    assert "temp folder" in said  # pytest's tmp_path is under it
    assert "Uploaded" in said
    assert "must be storage mounted" not in quiet.getvalue() and "Uploaded" in quiet.getvalue()
