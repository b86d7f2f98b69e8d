"""Spark's "local dependency" test (`KubernetesUtils.isLocalAndResolvable`) on plain URIs."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.submission.uris import NO_RESOURCE, is_local_dependency, uri_scheme


@pytest.mark.parametrize(
    ("uri", "scheme"),
    [
        ("/opt/app.jar", None),
        ("app.py", None),
        ("file:///opt/app.jar", "file"),
        ("S3A://bucket/app.jar", "s3a"),
        ("local:///opt/spark/app.jar", "local"),
        ("hdfs+x.y-z://nn/app.jar", "hdfs+x.y-z"),
        ("1http://not-a-scheme", None),
    ],
)
def test_uri_scheme_is_lowercased_and_none_for_a_bare_path(uri: str, scheme: str | None) -> None:
    assert uri_scheme(uri) == scheme


@pytest.mark.parametrize(
    ("uri", "local"),
    [
        ("/opt/app.jar", True),
        ("deps/app.py", True),
        ("file:/opt/app.jar", True),
        ("FILE:///opt/app.jar", True),
        ("local:///opt/spark/app.jar", False),
        ("s3a://bucket/app.jar", False),
        ("https://host/app.jar", False),
        (NO_RESOURCE, False),
    ],
)
def test_only_bare_paths_and_file_uris_are_uploaded(uri: str, local: bool) -> None:
    assert is_local_dependency(uri) is local


def test_no_resource_is_spark_launchers_name() -> None:
    assert NO_RESOURCE == "spark-internal"
