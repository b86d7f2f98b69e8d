"""fsspec options from the spark.hadoop.fs.s3a.* and fs.gs.* keys a spark-submit user already
has."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.storage_options import (
    gcs_connector_warning,
    gcs_options,
    s3_options,
    s3a_region_warning,
    secret_values,
    spark_conf_storage_options,
)

S3A = "spark.hadoop.fs.s3a."


def test_nothing_set_leaves_everything_to_the_environment():
    assert s3_options({"spark.app.name": "x"}) == {}


def test_endpoint_credentials_region_and_path_style():
    conf = {
        S3A + "endpoint": "http://127.0.0.1:7070",
        S3A + "endpoint.region": "eu-west-1",
        S3A + "access.key": "AK",
        S3A + "secret.key": "SK",
        S3A + "session.token": "TK",
        S3A + "path.style.access": "true",
    }
    assert s3_options(conf) == {
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:7070", "region_name": "eu-west-1"},
        "key": "AK",
        "secret": "SK",
        "token": "TK",
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }
    assert secret_values(conf) == ("SK", "TK")


def test_endpoint_without_scheme_follows_ssl_setting():
    assert s3_options({S3A + "endpoint": "minio:9000"})["client_kwargs"] == {
        "endpoint_url": "https://minio:9000"
    }
    plain = {S3A + "endpoint": "minio:9000", S3A + "connection.ssl.enabled": "false"}
    assert s3_options(plain)["client_kwargs"]["endpoint_url"] == "http://minio:9000"


def test_a_key_without_its_secret_is_left_to_the_environment():
    assert "key" not in s3_options({S3A + "access.key": "AK"})


def test_aws_connection_fields():
    from airflow_provider_sparkk8s.submission.storage_options import s3_options_from_connection

    extra = {
        "endpoint_url": "http://127.0.0.1:7070",
        "region_name": "eu-west-1",
        "aws_session_token": "TK",
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }
    assert s3_options_from_connection("AK", "SK", extra) == {
        "key": "AK",
        "secret": "SK",
        "token": "TK",
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:7070", "region_name": "eu-west-1"},
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }
    service = {"service_config": {"s3": {"endpoint_url": "http://s3.internal"}}}
    assert s3_options_from_connection(None, None, service) == {
        "client_kwargs": {"endpoint_url": "http://s3.internal"}
    }


def test_region_warning_for_an_s3a_endpoint_off_aws_without_a_region():
    conf = {S3A + "endpoint": "http://127.0.0.1:7070"}
    warning = s3a_region_warning("s3a://apps/up", conf, "4.3.0")
    assert warning is not None
    assert S3A + "endpoint.region" in warning and "us-east-2" in warning
    assert "http://127.0.0.1:7070" in warning and "s3a://apps/up" in warning


@pytest.mark.parametrize(
    ("upload_path", "conf", "spark_version"),
    [
        ("s3a://apps/up", {S3A + "endpoint": "minio:9000", S3A + "endpoint.region": "x"}, "4.3.0"),
        (
            "s3a://apps/up",
            {S3A + "endpoint": "minio:9000", S3A + "bucket.apps.endpoint.region": "us-east-1"},
            "4.0.1",
        ),
        ("s3a://apps/up", {S3A + "endpoint": "https://s3.eu-west-1.amazonaws.com"}, "4.3.0"),
        ("s3a://apps/up", {}, "4.3.0"),  # AWS itself: S3A finds the bucket's region
        ("s3a://apps/up", {S3A + "endpoint": "minio:9000"}, "3.5.1"),
        ("file:///shared/up", {S3A + "endpoint": "minio:9000"}, "4.3.0"),
        (None, {S3A + "endpoint": "minio:9000"}, "4.3.0"),
    ],
)
def test_no_region_warning(upload_path, conf, spark_version):
    assert s3a_region_warning(upload_path, conf, spark_version) is None


def test_a_bucket_s_own_endpoint_counts():
    conf = {S3A + "bucket.apps.endpoint": "minio:9000"}
    assert s3a_region_warning("s3a://apps/up", conf, "4.1.0") is not None
    assert s3a_region_warning("s3a://other/up", conf, "4.1.0") is None


GS = "spark.hadoop.fs.gs."


def test_gcs_root_url_auth_type_and_project():
    conf = {
        GS + "storage.root.url": "http://127.0.0.1:4443/",
        GS + "auth.type": "unauthenticated",
        GS + "project.id": "p1",
    }
    assert gcs_options(conf) == {
        "endpoint_url": "http://127.0.0.1:4443",
        "token": "anon",
        "project": "p1",
    }
    keyfile = {GS + "auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE"}
    keyfile[GS + "auth.service.account.json.keyfile"] = "/secrets/key.json"
    assert gcs_options(keyfile) == {"token": "/secrets/key.json"}
    # Credentials the connector finds on the machine: gcsfs' own lookup finds them too.
    assert gcs_options({GS + "auth.type": "APPLICATION_DEFAULT"}) == {}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("storage.root.url", "storage.googleapis.com"),
        ("storage.root.url", "ftp://127.0.0.1/"),
        ("storage.root.url", "https://127.0.0.1/storage/v1/"),
        ("auth.type", "OAUTH"),
    ],
)
def test_a_bad_gcs_key_names_key_and_value(key, value):
    with pytest.raises(SparkConfError) as error:
        gcs_options({GS + key: value})
    assert f"{GS}{key}={value!r}" in str(error.value)


def test_a_key_file_auth_without_its_file_names_the_missing_key():
    with pytest.raises(SparkConfError, match=r"auth\.service\.account\.json\.keyfile is not set"):
        gcs_options({GS + "auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE"})


def test_gcs_keys_are_read_only_for_a_gs_upload_path():
    bad = {GS + "auth.type": "OAUTH"}
    s3_path = {"spark.kubernetes.file.upload.path": "s3a://b/u", **bad}
    assert "gs" not in spark_conf_storage_options(s3_path)
    with pytest.raises(SparkConfError):
        spark_conf_storage_options({"spark.kubernetes.file.upload.path": "gs://b/u", **bad})


def test_the_2x_connectors_switches_count_without_auth_type():
    assert gcs_options({GS + "auth.null.enable": "true"}) == {"token": "anon"}
    keyfile = {GS + "auth.service.account.json.keyfile": "/k.json"}
    assert gcs_options(keyfile) == {"token": "/k.json"}
    off = {**keyfile, GS + "auth.service.account.enable": "false"}
    assert gcs_options(off) == {}
    # auth.type (3.x) wins over the 2.x switches.
    both = {GS + "auth.null.enable": "true", GS + "auth.type": "APPLICATION_DEFAULT"}
    assert gcs_options(both) == {}


def test_gs_uploads_on_hadoop_35_warn_without_the_connectors_impl():
    """Spark 4.2+ ships Hadoop 3.5, whose core-default.xml names a gs:// file system Spark
    does not ship (tests/runtime/test_gcs_uploads_real_spark.py sets the keys it names)."""
    warning = gcs_connector_warning("gs://apps/up", {}, "4.3.0")
    assert warning is not None
    assert (
        "spark.hadoop.fs.gs.impl=com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem" in warning
    )
    assert "spark.hadoop.fs.gs.block.size=67108864" in warning
    assert gcs_connector_warning("gs://apps/up", {}, "4.2.1") is not None
    set_impl = {"spark.hadoop.fs.gs.impl": "org.apache.hadoop.fs.gs.GoogleHadoopFileSystem"}
    assert gcs_connector_warning("gs://apps/up", set_impl, "4.3.0") is None
    assert gcs_connector_warning("gs://apps/up", {}, "4.1.4") is None
    assert gcs_connector_warning("s3a://apps/up", {}, "4.3.0") is None
