"""Uploads to a real Azure Blob emulator (Azurite's blob service) through adlfs, with
hadoop-azure's URL forms (`abfs://container@account.dfs.core.windows.net/...` and
`wasbs://container@account.blob.core.windows.net/...`): what lands, byte for byte, that a
refused submission leaves no object, that the operator's driver takes its uploads along,
and that the account key is echoed nowhere. The emulator's endpoint and key reach adlfs as a
user's would: AZURE_STORAGE_CONNECTION_STRING, or hadoop-azure's own keys in the Spark conf
(`fs.azure.abfs.endpoint` with `always.use.https=false`, the account key or a SAS named
after the path's host: submission/azure_options.py). The account and its key are random
per run (testenv/azurite.py), so the key is a real secret to look for."""

from __future__ import annotations

import datetime
import io
import logging
import secrets
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.services.submit.uploader import UploadError
from testenv.azurite import Azurite
from testenv.harness.recorder import RecordingServer
from tests.storage.cases import (
    REFUSALS,
    argv,
    local_app,
    operator_upload_goes_with_the_driver,
    refused_submission_leaves_nothing,
    submit_and_check_uploads,
)
from tests.triggers.spark_pods import connection_for

HOSTS = {"abfs": "dfs.core.windows.net", "wasbs": "blob.core.windows.net"}
AZ = "spark.hadoop.fs.azure."


@pytest.fixture
def container(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    return azurite.make_container("apps-" + secrets.token_hex(3))


@pytest.fixture
def bare_container(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> str:
    """A container, and no AZURE_STORAGE_* in the environment: the Spark conf must do."""
    for name in ("CONNECTION_STRING", "ACCOUNT_NAME", "ACCOUNT_KEY", "SAS_TOKEN"):
        monkeypatch.delenv(f"AZURE_STORAGE_{name}", raising=False)
    return azurite.make_container("keys-" + secrets.token_hex(3))


def upload_path(azurite: Azurite, container: str, scheme: str = "abfs") -> str:
    return f"{scheme}://{container}@{azurite.account}.{HOSTS[scheme]}/uploads"


def hadoop_keys(azurite: Azurite, scheme: str, credential: dict[str, str]) -> dict[str, str]:
    """hadoop-azure's keys for the emulator: its endpoint over HTTP and `credential` (the
    key names' `{host}` is the upload path's host)."""
    host = f"{azurite.account}.{HOSTS[scheme]}"
    return {
        AZ + "abfs.endpoint": f"127.0.0.1:{azurite.port}",
        AZ + "always.use.https": "false",
        **{name.format(host=host): value for name, value in credential.items()},
    }


def refused_upload_echoes_nothing(
    azurite: Azurite,
    container: str,
    tmp_path: Path,
    conf: dict[str, str],
    wrong: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The CLI's upload refused by the service: no request to Kubernetes, no object, and
    neither the wrong key nor the real one in the error, the output or the log."""
    with RecordingServer() as api:
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(UploadError) as error:
            run(
                argv(api, tmp_path, upload_path(azurite, container), conf),
                environ={}, out=out, err=err,
            )  # fmt: skip
        recorded = api.recording.as_list()
    assert "could not upload" in str(error.value)
    seen = str(error.value) + out.getvalue() + err.getvalue() + caplog.text
    assert wrong not in seen and azurite.account_key not in seen
    assert recorded == [] and azurite.objects(container) == {}


@pytest.mark.parametrize("scheme", ["abfs", "wasbs"])
def test_hadoop_azures_account_key_signs_the_upload(azurite, bare_container, tmp_path, scheme):
    key_name = AZ + "account.key.{host}"
    conf = hadoop_keys(azurite, scheme, {key_name: azurite.account_key})
    props = submit_and_check_uploads(
        tmp_path, upload_path(azurite, bare_container, scheme), conf,
        lambda: azurite.objects(bare_container),
    )  # fmt: skip
    # The driver's hadoop-azure is handed the same key, as spark-submit hands it on.
    assert props[key_name.format(host=f"{azurite.account}.{HOSTS[scheme]}")] == azurite.account_key


def test_an_abfs_fixed_sas_signs_the_upload(azurite, bare_container, tmp_path):
    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    sas = generate_account_sas(
        azurite.account, azurite.account_key,
        resource_types=ResourceTypes(container=True, object=True),
        permission=AccountSasPermissions(read=True, write=True, delete=True, list=True, create=True),
        expiry=datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1),
    )  # fmt: skip
    conf = hadoop_keys(azurite, "abfs", {AZ + "sas.fixed.token.{host}": sas})
    submit_and_check_uploads(
        tmp_path, upload_path(azurite, bare_container), conf,
        lambda: azurite.objects(bare_container),
    )  # fmt: skip


def test_a_wrong_hadoop_account_key_fails_without_echoing_it(
    azurite, bare_container, tmp_path, caplog
):
    """The key from the Spark conf, refused by the service: nothing written, and the key in
    no message, no output and no log record (at DEBUG, where the SDK logs its requests)."""
    caplog.set_level(logging.DEBUG)
    local_app(tmp_path)
    wrong = secrets.token_bytes(64).hex()  # hex is valid base64: it signs, and is refused
    conf = hadoop_keys(azurite, "abfs", {AZ + "account.key.{host}": wrong})
    refused_upload_echoes_nothing(azurite, bare_container, tmp_path, conf, wrong, caplog)


@pytest.mark.parametrize("scheme", ["abfs", "wasbs"])
def test_submission_uploads_to_azure_before_the_first_request(azurite, container, tmp_path, scheme):
    submit_and_check_uploads(
        tmp_path,
        upload_path(azurite, container, scheme),
        {},
        lambda: azurite.objects(container),
        secret=azurite.account_key,
    )


@pytest.mark.parametrize("refusal", REFUSALS, ids=["pod", "configmap"])
def test_failed_submission_leaves_no_object(azurite, container, tmp_path, refusal):
    refused_submission_leaves_nothing(
        tmp_path, upload_path(azurite, container), {}, refusal,
        lambda: azurite.objects(container), secret=azurite.account_key,
    )  # fmt: skip


def test_a_wrong_account_key_fails_without_echoing_it(
    azurite, container, tmp_path, monkeypatch, caplog
):
    """A planted key the service refuses: nothing is written, and the key is in no message,
    no output and no log record (at DEBUG, where the SDK logs its requests)."""
    caplog.set_level(logging.DEBUG)
    local_app(tmp_path)
    wrong = secrets.token_bytes(64).hex()  # hex is valid base64: it signs, and is refused
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string_with(wrong))
    refused_upload_echoes_nothing(azurite, container, tmp_path, {}, wrong, caplog)


@pytest.mark.controlplane
def test_the_operators_driver_takes_its_azure_uploads_along(
    azurite, container, tmp_path: Path, kubeconfig, namespace, kube_admin, monkeypatch
):
    conf = {"spark.kubernetes.file.upload.path": upload_path(azurite, container)}
    operator_upload_goes_with_the_driver(
        tmp_path, connection_for(monkeypatch, kubeconfig), namespace, kube_admin, conf,
        lambda: azurite.objects(container), secret=azurite.account_key,
    )  # fmt: skip
