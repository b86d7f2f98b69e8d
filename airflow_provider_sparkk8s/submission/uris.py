"""Spark's test for "a local dependency" (`KubernetesUtils.isLocalAndResolvable`)."""

from __future__ import annotations

import re

from airflow_provider_sparkk8s.errors import SparkConfError

NO_RESOURCE = "spark-internal"  # SparkLauncher.NO_RESOURCE
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
UPLOAD_NOT_SUPPORTED = (
    "local files are uploaded by spark-submit to spark.kubernetes.file.upload.path; "
    "uploading them is not supported yet, so put them in the image (local://) "
    "or on remote storage"
)
REMOTE_ACCEPTED = (
    "remote or in-image URIs such as local:///opt/app.jar, s3a://..., hdfs://..., https://..."
)


def uri_scheme(uri: str) -> str | None:
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else None


def is_local_dependency(uri: str) -> bool:
    """True for a bare path or a `file:` URI (what spark-submit would upload)."""
    return uri != NO_RESOURCE and uri_scheme(uri) in (None, "file")


def reject_local(key: str, uri: str) -> None:
    if is_local_dependency(uri):
        raise SparkConfError(key, uri, REMOTE_ACCEPTED, UPLOAD_NOT_SUPPORTED)
