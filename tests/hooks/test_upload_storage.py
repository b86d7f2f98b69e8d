"""Where the operator's uploads go: the Spark conf and environment without a connection, the
file system a provider maps the connection to, an `aws` connection mapped here (its secret
masked and scrubbed), any other scheme refused naming the connection, and removal that reports
what could not go instead of failing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.hooks import upload_storage
from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook

CONF = {"spark.hadoop.fs.s3a.endpoint": "http://minio:9000"}


def no_provider_maps(path: str, conn_id: str) -> Any:
    raise ValueError(f"no file system for {path}")


def test_without_a_connection_the_spark_conf_decides() -> None:
    storage = SparkK8sUploadStorageHook().storage("s3a://bucket/uploads", CONF)
    assert storage.filesystems == {}
    assert storage.options["s3"]["client_kwargs"]["endpoint_url"] == "http://minio:9000"


def test_a_file_system_a_provider_maps_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    mapped = object()
    monkeypatch.setattr(upload_storage, "object_storage_fs", lambda path, conn_id: mapped)
    storage = SparkK8sUploadStorageHook("gcs_conn").storage("gs://bucket/uploads", CONF)
    assert storage.filesystems == {"gs": mapped}


def test_an_aws_connection_is_mapped_here_and_its_secret_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    masked: list[str] = []
    connection = SimpleNamespace(
        login="AKIA", password="s3cr3t", extra_dejson={"aws_session_token": "tok"}
    )
    monkeypatch.setattr(upload_storage, "object_storage_fs", no_provider_maps)
    monkeypatch.setattr(upload_storage, "mask_secret", masked.append)
    hook = SparkK8sUploadStorageHook("aws_conn")
    monkeypatch.setattr(hook, "get_connection", lambda conn_id: connection)
    storage = hook.storage("s3a://bucket/uploads", CONF)
    assert storage.options == {"s3": {"key": "AKIA", "secret": "s3cr3t", "token": "tok"}}
    assert storage.secrets == ("s3cr3t", "tok")
    assert masked == ["s3cr3t"]


def test_a_scheme_no_provider_maps_names_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload_storage, "object_storage_fs", no_provider_maps)
    with pytest.raises(SparkConfError) as raised:
        SparkK8sUploadStorageHook("azure_conn").storage("abfs://c@acct/uploads", CONF)
    assert (raised.value.key, raised.value.value) == ("upload_conn_id", "azure_conn")
    assert raised.value.accepted == "a connection a provider maps to a abfs:// file system"


def test_removal_reports_a_storage_it_cannot_open_and_nothing_to_remove(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(upload_storage, "object_storage_fs", no_provider_maps)
    hook = SparkK8sUploadStorageHook("azure_conn")
    left = hook.remove(["abfs://c@acct/uploads/spark-upload-1"], CONF)
    assert left == ["abfs://c@acct/uploads (SparkConfError)"]
    assert hook.remove([], CONF) == []
