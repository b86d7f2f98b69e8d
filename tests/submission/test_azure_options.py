"""adlfs options from the hadoop-azure keys a spark-submit user already has: the account key or
SAS named after the upload path's host, and an endpoint other than Azure's (the Azurite cases
are tests/storage/test_upload_azure.py)."""

from __future__ import annotations

import re

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.azure_options import azure_options
from airflow_provider_sparkk8s.submission.storage_options import (
    secret_values,
    spark_conf_storage_options,
)

AZ = "spark.hadoop.fs.azure."
ABFS = "abfss://apps@acct.dfs.core.windows.net/uploads"
WASB = "wasbs://apps@acct.blob.core.windows.net/uploads"


def test_the_key_named_after_the_paths_host_signs_at_azures_endpoint():
    conf = {AZ + "account.key.acct.dfs.core.windows.net": "K1", AZ + "account.key.other": "K2"}
    assert azure_options(conf, ABFS) == {"account_name": "acct", "account_key": "K1"}
    # WASB reads the blob host's key only; ABFS falls back to the unqualified key.
    assert azure_options(conf, WASB) == {}
    blob = {AZ + "account.key.acct.blob.core.windows.net": "K3"}
    assert azure_options(blob, WASB) == {"account_name": "acct", "account_key": "K3"}
    assert azure_options({AZ + "account.key": "K4"}, ABFS)["account_key"] == "K4"
    assert azure_options({AZ + "account.key": "K4"}, WASB) == {}


def test_a_sas_when_there_is_no_key():
    abfs = {AZ + "sas.fixed.token.acct.dfs.core.windows.net": "?sv=1&sig=S"}
    assert azure_options(abfs, ABFS) == {"account_name": "acct", "sas_token": "sv=1&sig=S"}
    wasb = {AZ + "sas.apps.acct.blob.core.windows.net": "sv=2&sig=T"}
    assert azure_options(wasb, WASB) == {"account_name": "acct", "sas_token": "sv=2&sig=T"}
    assert azure_options(wasb, WASB.replace("apps@", "logs@")) == {}


def test_another_endpoint_becomes_a_connection_string():
    conf = {
        AZ + "account.key.acct.dfs.core.windows.net": "K1",
        AZ + "abfs.endpoint": "127.0.0.1:10000",
        AZ + "always.use.https": "false",
    }
    assert azure_options(conf, ABFS) == {
        "connection_string": "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=K1;"
        "BlobEndpoint=http://127.0.0.1:10000/acct;"
    }
    # A host name that is not an address: the account is its first label, over HTTPS.
    named = {**conf, AZ + "abfs.endpoint": "blob.example.net"}
    del named[AZ + "always.use.https"]
    assert (
        "BlobEndpoint=https://acct.blob.example.net;"
        in azure_options(named, ABFS)["connection_string"]
    )


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:10000", "127.0.0.1:10000/acct"])
def test_an_endpoint_with_a_scheme_or_path_is_named(endpoint):
    conf = {AZ + "account.key.acct.dfs.core.windows.net": "K1", AZ + "abfs.endpoint": endpoint}
    with pytest.raises(SparkConfError) as error:
        azure_options(conf, ABFS)
    assert f"{AZ}abfs.endpoint={endpoint!r}" in str(error.value) and "K1" not in str(error.value)


def test_an_endpoint_with_nothing_to_sign_is_named():
    with pytest.raises(
        SparkConfError, match=re.escape(AZ + "account.key.acct.dfs.core.windows.net")
    ):
        azure_options({AZ + "abfs.endpoint": "127.0.0.1:10000"}, ABFS)


def test_read_only_for_an_azure_upload_path_and_every_key_is_a_secret():
    conf = {AZ + "account.key.acct.dfs.core.windows.net": "K1", AZ + "sas.apps.x": "S1",
            AZ + "sas.token.provider.type": "org.example.Provider"}  # fmt: skip
    assert "abfss" not in spark_conf_storage_options(conf)
    with_path = spark_conf_storage_options({**conf, "spark.kubernetes.file.upload.path": ABFS})
    assert with_path["abfss"] == with_path["wasbs"] == {"account_name": "acct", "account_key": "K1"}
    assert set(secret_values(conf)) == {"K1", "S1"}
    assert azure_options(conf, "az://apps/uploads") == {}  # no account in the path
