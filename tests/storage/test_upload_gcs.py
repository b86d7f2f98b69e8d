"""Uploads to a real GCS emulator (fake-gcs-server) through gcsfs, configured by the GCS
connector's own `spark.hadoop.fs.gs.*` keys as a spark-submit user sets them: what lands,
byte for byte, that a refused submission leaves no object, that the operator's driver takes
its uploads along, and that a planted credential is echoed nowhere."""

from __future__ import annotations

import io
import json
import logging
import secrets
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.submit.uploader import Storage, UploadError, upload_all
from airflow_provider_sparkk8s.submission.storage_options import spark_conf_storage_options
from airflow_provider_sparkk8s.submission.upload_plan import plan_uploads
from testenv.controlplane import free_port
from testenv.gcsserver import GcsServer
from testenv.harness.recorder import RecordingServer
from tests.storage.cases import (
    REFUSALS,
    argv,
    local_app,
    operator_upload_goes_with_the_driver,
    refused_submission_leaves_nothing,
    submit_and_check_uploads,
)
from tests.support.driver_conf import make_conf
from tests.triggers.spark_pods import connection_for

GS = "spark.hadoop.fs.gs."


def gs_conf(gcs: GcsServer) -> dict[str, str]:
    """The connector's keys for an emulator: its root URL, and no credentials."""
    return {GS + "storage.root.url": gcs.endpoint + "/", GS + "auth.type": "UNAUTHENTICATED"}


def new_bucket(gcs: GcsServer, stem: str) -> str:
    return gcs.make_bucket(f"{stem}-{secrets.token_hex(3)}")


def test_submission_uploads_to_gcs_before_the_first_request(gcs_server, tmp_path):
    bucket = new_bucket(gcs_server, "apps")
    props = submit_and_check_uploads(
        tmp_path, f"gs://{bucket}/uploads", gs_conf(gcs_server), lambda: gcs_server.objects(bucket)
    )
    # The driver's connector gets the same keys, as spark-submit passes them on.
    assert props[GS + "storage.root.url"] == gcs_server.endpoint + "/"


@pytest.mark.parametrize("refusal", REFUSALS, ids=["pod", "configmap"])
def test_failed_submission_leaves_no_object(gcs_server, tmp_path, refusal):
    bucket = new_bucket(gcs_server, "fail")
    refused_submission_leaves_nothing(
        tmp_path, f"gs://{bucket}/uploads", gs_conf(gcs_server), refusal,
        lambda: gcs_server.objects(bucket),
    )  # fmt: skip


def test_upload_interrupted_half_way_leaves_no_object(gcs_server, tmp_path):
    bucket = new_bucket(gcs_server, "half")
    local_app(tmp_path)
    settings = {
        "spark.kubernetes.file.upload.path": f"gs://{bucket}/uploads",
        "spark.submit.pyFiles": f"file:{tmp_path}/helpers.py",
        "spark.archives": f"file:{tmp_path}/env.tar.gz",
        **gs_conf(gcs_server),
    }
    conf = make_conf(settings, kind="python", primary=f"file:{tmp_path}/etl.py")
    written: list[str] = []

    def stop_after_two(upload):  # type: ignore[no-untyped-def]
        written.append(upload.target)
        if len(written) == 2:
            raise OSError("connection reset")

    storage = Storage(spark_conf_storage_options(settings))
    with pytest.raises(UploadError, match="nothing was left"):
        upload_all(plan_uploads(conf), storage, on_upload=stop_after_two)
    assert len(written) == 2 and gcs_server.objects(bucket) == {}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("storage.root.url", "127.0.0.1:4443"),  # no scheme
        ("storage.root.url", "http://127.0.0.1:4443/storage/v1/"),  # a path gcsfs cannot take
        ("auth.type", "SERVICE_ACCOUNT"),
    ],
)
def test_a_bad_connector_key_is_named_before_anything_is_written(gcs_server, tmp_path, key, value):
    bucket = new_bucket(gcs_server, "bad")
    local_app(tmp_path)
    conf = {**gs_conf(gcs_server), GS + key: value}
    with RecordingServer() as api:
        with pytest.raises(SparkConfError) as error:
            run(
                argv(api, tmp_path, f"gs://{bucket}/uploads", conf),
                environ={}, out=io.StringIO(), err=io.StringIO(),
            )  # fmt: skip
        recorded = api.recording.as_list()
    assert f"{GS}{key}={value!r}" in str(error.value)
    assert recorded == [] and gcs_server.objects(bucket) == {}


def planted_keyfile(tmp_path: Path) -> tuple[Path, str]:
    """A service account key file whose token endpoint is a closed loopback port: the key
    signs a token request that cannot be answered. Returns (path, the private key's PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "sparkk8s-test",
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": "uploader@sparkk8s-test.iam.gserviceaccount.com",
        "client_id": "1" + "0" * 20,
        "token_uri": f"http://127.0.0.1:{free_port()}/token",
    }
    path = tmp_path / "key.json"
    path.write_text(json.dumps(info))
    return path, pem


def test_a_key_file_that_cannot_sign_in_fails_without_echoing_the_key(gcs_server, tmp_path, caplog):
    """The connector's SERVICE_ACCOUNT_JSON_KEYFILE: gcsfs reads the file named by the key
    and must sign in before it writes; when it cannot, nothing is written and the key's
    private part is in no message and no log record (at DEBUG)."""
    caplog.set_level(logging.DEBUG)
    bucket = new_bucket(gcs_server, "key")
    local_app(tmp_path)
    keyfile, pem = planted_keyfile(tmp_path)
    conf = {
        GS + "storage.root.url": gcs_server.endpoint,
        GS + "auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",
        GS + "auth.service.account.json.keyfile": str(keyfile),
    }
    with RecordingServer() as api:
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(UploadError) as error:
            run(argv(api, tmp_path, f"gs://{bucket}/uploads", conf), environ={}, out=out, err=err)
        recorded = api.recording.as_list()
    body = pem.splitlines()[5]  # a line from inside the key, not its BEGIN/END markers
    seen = str(error.value) + out.getvalue() + err.getvalue() + caplog.text
    # The removal cannot sign in either, so it cannot say the folder is gone: it says so.
    assert "could not upload" in str(error.value) and "could NOT remove" in str(error.value)
    assert body not in seen and pem not in seen
    assert recorded == [] and gcs_server.objects(bucket) == {}


@pytest.mark.controlplane
def test_the_operators_driver_takes_its_gcs_uploads_along(
    gcs_server, tmp_path, kubeconfig, namespace, kube_admin, monkeypatch
):
    bucket = new_bucket(gcs_server, "op")
    conf = {"spark.kubernetes.file.upload.path": f"gs://{bucket}/uploads", **gs_conf(gcs_server)}
    operator_upload_goes_with_the_driver(
        tmp_path, connection_for(monkeypatch, kubeconfig), namespace, kube_admin, conf,
        lambda: gcs_server.objects(bucket),
    )  # fmt: skip


def test_a_spark_4_3_submission_warns_until_the_connector_is_named(gcs_server, tmp_path):
    """Spark 4.3's Hadoop 3.5 names a gs:// file system Spark does not ship: the upload goes
    through and the CLI warns, until `fs.gs.impl` names the connector the image carries."""
    bucket = new_bucket(gcs_server, "warn")
    local_app(tmp_path)
    image = {"spark.kubernetes.container.image": "apache/spark:4.3.0"}
    errors = []
    for extra in ({}, {GS + "impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"}):
        with RecordingServer() as api:
            err = io.StringIO()
            conf = {**gs_conf(gcs_server), **image, **extra}
            code = run(
                argv(api, tmp_path, f"gs://{bucket}/uploads", conf),
                environ={}, out=io.StringIO(), err=err,
            ).exit_code  # fmt: skip
        assert code == 0, err.getvalue()
        errors.append(err.getvalue())
    assert f"{GS}impl=com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem" in errors[0]
    assert f"{GS}block.size=67108864" in errors[0]
    assert f"{GS}impl" not in errors[1]
