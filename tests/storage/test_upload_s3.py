"""Uploads to a real S3-compatible server (versitygw): what lands, byte for byte, where the
driver's settings point, and that a failure anywhere leaves no object behind."""

from __future__ import annotations

import io
import secrets
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.services.submit.uploader import Storage, UploadError, upload_all
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from airflow_provider_sparkk8s.submission.upload_plan import plan_uploads
from testenv.harness.recorder import RecordingServer
from testenv.s3server import S3Server
from tests.storage.cases import REFUSALS, local_app, refused_submission_leaves_nothing
from tests.support.driver_conf import make_conf

S3A = "spark.hadoop.fs.s3a."


def argv(server: RecordingServer, tmp_path: Path, bucket: str, *conf: str) -> list[str]:
    return [
        "--master", f"k8s://{server.url}", "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.0",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--conf", f"spark.kubernetes.file.upload.path=s3a://{bucket}/uploads",
        *conf,
        "--py-files", str(tmp_path / "helpers.py"),
        "--archives", f"{tmp_path}/env.tar.gz#env",
        str(tmp_path / "etl.py"),
    ]  # fmt: skip


def s3a_conf(s3: S3Server) -> list[str]:
    pairs = {
        "endpoint": s3.endpoint,
        "access.key": s3.access_key,
        "secret.key": s3.secret_key,
        "path.style.access": "true",
    }
    return [arg for key, value in pairs.items() for arg in ("--conf", f"{S3A}{key}={value}")]


def properties(recorded: list[dict]) -> dict[str, str]:
    conf_map = next(r["body"] for r in recorded if (r["body"] or {}).get("kind") == "ConfigMap")
    return load_java_properties(conf_map["data"]["spark.properties"])


def test_submission_uploads_to_s3_before_the_first_request(s3_server, tmp_path):
    bucket = s3_server.make_bucket("apps-" + secrets.token_hex(3))
    contents = local_app(tmp_path)
    with RecordingServer() as api:
        first_request_saw: list[dict[str, bytes]] = []
        respond = api.respond

        def look_then_respond(method, path, body):  # type: ignore[no-untyped-def]
            first_request_saw.append(s3_server.objects(bucket))
            return respond(method, path, body)

        api.respond = look_then_respond  # type: ignore[method-assign]
        err = io.StringIO()
        code = run(
            argv(api, tmp_path, bucket, *s3a_conf(s3_server)),
            environ={"HOME": str(tmp_path)},
            out=io.StringIO(),
            err=err,
        ).exit_code
        recorded = api.recording.as_list()
    assert code == 0
    # No region for a loopback endpoint: uploaded, with the warning that Spark 4's S3A in the
    # driver signs for us-east-2 (tests/runtime/test_s3a_uploads_real_spark.py sets one).
    assert f"{S3A}endpoint.region" in err.getvalue() and "us-east-2" in err.getvalue()
    stored = s3_server.objects(bucket)
    assert first_request_saw[0] == stored  # everything was there before the first request
    by_name = {key.rsplit("/", 1)[1]: (key, data) for key, data in stored.items()}
    assert sorted(by_name) == sorted(contents)
    for name, (key, data) in by_name.items():
        assert data == contents[name], name  # byte for byte
        assert key.startswith("uploads/spark-upload-")
    props = properties(recorded)
    helpers_key, _ = by_name["helpers.py"]
    env_key, _ = by_name["env.tar.gz"]
    assert props["spark.submit.pyFiles"] == f"s3a://{bucket}/{helpers_key}"
    assert props["spark.archives"] == f"s3a://{bucket}/{env_key}#env"
    pod = next(r["body"] for r in recorded if (r["body"] or {}).get("kind") == "Pod")
    assert pod["spec"]["containers"][-1]["args"][-1] == f"s3a://{bucket}/{by_name['etl.py'][0]}"
    # The secret reaches the driver's properties as spark-submit sends it, nowhere else.
    assert s3_server.secret_key not in str(pod)


def test_credentials_from_the_environment(s3_server, tmp_path, monkeypatch):
    bucket = s3_server.make_bucket("env-" + secrets.token_hex(3))
    local_app(tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    with RecordingServer() as api:
        outcome = run(argv(api, tmp_path, bucket), environ={}, out=io.StringIO(), err=io.StringIO())
    assert outcome.exit_code == 0
    assert len(s3_server.objects(bucket)) == 3


@pytest.mark.parametrize("refusal", REFUSALS, ids=["pod", "configmap"])
def test_failed_submission_leaves_no_object(s3_server, tmp_path, refusal):
    bucket = s3_server.make_bucket("fail-" + secrets.token_hex(3))
    conf = {
        S3A + "endpoint": s3_server.endpoint,
        S3A + "access.key": s3_server.access_key,
        S3A + "secret.key": s3_server.secret_key,
        S3A + "path.style.access": "true",
    }
    refused_submission_leaves_nothing(
        tmp_path, f"s3a://{bucket}/uploads", conf, refusal,
        lambda: s3_server.objects(bucket), secret=s3_server.secret_key,
    )  # fmt: skip


def test_upload_interrupted_half_way_leaves_no_object(s3_server, tmp_path):
    bucket = s3_server.make_bucket("half-" + secrets.token_hex(3))
    local_app(tmp_path)
    conf = make_conf(
        {
            "spark.kubernetes.file.upload.path": f"s3a://{bucket}/uploads",
            "spark.submit.pyFiles": f"file:{tmp_path}/helpers.py",
            "spark.archives": f"file:{tmp_path}/env.tar.gz",
        },
        kind="python",
        primary=f"file:{tmp_path}/etl.py",
    )
    plan = plan_uploads(conf)
    written: list[str] = []

    def stop_after_two(upload):  # type: ignore[no-untyped-def]
        written.append(upload.target)
        if len(written) == 2:
            raise OSError("connection reset")

    storage = Storage({"s3": s3_server.storage_options()})
    with pytest.raises(UploadError, match="nothing was left"):
        upload_all(plan, storage, on_upload=stop_after_two)
    assert len(written) == 2 and s3_server.objects(bucket) == {}


def test_wrong_secret_fails_without_echoing_it(s3_server, tmp_path):
    bucket = s3_server.make_bucket("deny-" + secrets.token_hex(3))
    local_app(tmp_path)
    wrong = "wrong-" + secrets.token_hex(8)
    conf = make_conf(
        {
            "spark.kubernetes.file.upload.path": f"s3a://{bucket}/uploads",
            "spark.files": f"file:{tmp_path}/helpers.py",
        }
    )
    options = {**s3_server.storage_options(), "secret": wrong}
    with pytest.raises(UploadError) as err:
        upload_all(plan_uploads(conf), Storage({"s3": options}, secrets=(wrong,)))
    assert wrong not in str(err.value) and "helpers.py" in str(err.value)
    assert s3_server.objects(bucket) == {}
