"""The two warnings for an abfs upload path on Hadoop 3.5.0's ABFS (Spark 4.2, 4.3), both
seen on a real 4.3.0 driver (tests/runtime/test_azure_uploads_real_spark.py): a driver JVM
kept alive by ABFS's metrics threads, and plain HTTP refused by its default HTTP client."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.submission.abfs_warnings import (
    abfs_exit_warning,
    abfs_plain_http_warning,
)

AZ = "spark.hadoop.fs.azure."
ABFS = "abfs://apps@acct.dfs.core.windows.net/uploads"
METRICS_OFF = {AZ + "metrics.collection.enabled": "false"}
HTTP = {AZ + "always.use.https": "false"}


def test_exit_warning_names_the_two_keys_that_end_the_driver():
    warning = abfs_exit_warning(ABFS, {}, "4.3.0")
    assert warning is not None
    assert f"spark.kubernetes.file.upload.path={ABFS}" in warning
    assert "spark.hadoop.fs.azure.metrics.collection.enabled=false" in warning
    assert "spark.submit.callSystemExitOnMainExit=true" in warning
    assert abfs_exit_warning(ABFS.replace("abfs", "abfss"), {}, "4.2.1") is not None


@pytest.mark.parametrize(
    ("upload_path", "conf", "spark_version"),
    [
        (ABFS, METRICS_OFF, "4.3.0"),
        (ABFS, {AZ + "metrics.collection.enabled": " FALSE "}, "4.3.0"),
        (ABFS, {"spark.submit.callSystemExitOnMainExit": "true"}, "4.3.0"),
        (ABFS, {}, "4.1.4"),  # Hadoop 3.4.2: its ABFS timer thread is a daemon
        (ABFS, {}, "3.5.9"),
        ("wasbs://apps@acct.blob.core.windows.net/up", {}, "4.3.0"),  # WASB: no ABFS client
        ("s3a://apps/up", {}, "4.3.0"),
        (None, {}, "4.3.0"),
    ],
)
def test_no_exit_warning(upload_path, conf, spark_version):
    assert abfs_exit_warning(upload_path, conf, spark_version) is None


def test_metrics_on_still_warns():
    conf = {AZ + "metrics.collection.enabled": "true", "spark.submit.callSystemExitOnMainExit": ""}
    assert abfs_exit_warning(ABFS, conf, "4.3.0") is not None


def test_plain_http_warning_names_the_networking_key_and_value():
    warning = abfs_plain_http_warning(ABFS, HTTP, "4.3.0")
    assert warning is not None
    assert "spark.hadoop.fs.azure.always.use.https=false" in warning
    assert "spark.hadoop.fs.azure.networking.library=JDK_HTTP_URL_CONNECTION" in warning
    assert ABFS in warning


@pytest.mark.parametrize(
    ("upload_path", "conf", "spark_version"),
    [
        (ABFS, {**HTTP, AZ + "networking.library": "JDK_HTTP_URL_CONNECTION"}, "4.3.0"),
        (ABFS, {}, "4.3.0"),  # HTTPS, the default
        (ABFS, HTTP, "4.1.4"),  # Hadoop 3.4's default client is the JDK's
        (ABFS.replace("abfs", "abfss"), HTTP, "4.3.0"),  # abfss is always HTTPS
    ],
)
def test_no_plain_http_warning(upload_path, conf, spark_version):
    assert abfs_plain_http_warning(upload_path, conf, spark_version) is None


def test_an_unsupported_line_is_refused_naming_it():
    with pytest.raises(SparkConfError, match="spark_version"):
        abfs_exit_warning(ABFS, {}, "9.9.9")


def test_the_plan_carries_both_warnings_for_a_local_file(tmp_path):
    app = tmp_path / "etl.py"
    app.write_text("print(1)\n")
    conf = {"spark.kubernetes.file.upload.path": ABFS, **HTTP}
    planned = plan_for(str(app), conf)
    assert len(planned.storage_warnings) == 2
    assert any("networking.library" in w for w in planned.storage_warnings)
    assert any("metrics.collection.enabled" in w for w in planned.storage_warnings)
    quiet = plan_for(
        str(app), {**conf, **METRICS_OFF, AZ + "networking.library": "JDK_HTTP_URL_CONNECTION"}
    )
    assert quiet.storage_warnings == ()


def plan_for(application: str, conf: dict[str, str]) -> submission.Planned:
    """The plan of a 4.3.0 submission of `application` with `conf`: nothing is sent."""
    argv = [
        "--master", "k8s://https://192.0.2.1:6443", "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.3.0",
        *(item for key, value in conf.items() for item in ("--conf", f"{key}={value}")),
        application,
    ]  # fmt: skip
    request = submission.SubmissionRequest(argv, environ={}, cwd=str(Path(application).parent))
    return submission.plan(submission.parse(request), spark_version="4.3.0", environ={})
