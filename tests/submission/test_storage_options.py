"""fsspec options from the spark.hadoop.fs.s3a.* keys a spark-submit user already has."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.submission.storage_options import (
    s3_options,
    s3a_region_warning,
    secret_values,
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
