"""Uploads to a real Azure Blob emulator (Azurite's blob service) through adlfs, with
hadoop-azure's URL forms (`abfs://container@account.dfs.core.windows.net/...` and
`wasbs://container@account.blob.core.windows.net/...`): what lands, byte for byte, that a
refused submission leaves no object, that the operator's driver takes its uploads along,
and that the account key is echoed nowhere. The emulator's endpoint reaches adlfs as a user's
would: AZURE_STORAGE_CONNECTION_STRING (no Hadoop key names an emulator's blob endpoint).
The account and its key are random per run (testenv/azurite.py), so the key is a real
secret to look for."""

from __future__ import annotations

import io
import logging
import secrets
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.services.uploader import UploadError
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


@pytest.fixture
def container(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    return azurite.make_container("apps-" + secrets.token_hex(3))


def upload_path(azurite: Azurite, container: str, scheme: str = "abfs") -> str:
    return f"{scheme}://{container}@{azurite.account}.{HOSTS[scheme]}/uploads"


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
    with RecordingServer() as api:
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(UploadError) as error:
            run(
                argv(api, tmp_path, upload_path(azurite, container), {}),
                environ={}, out=out, err=err,
            )  # fmt: skip
        recorded = api.recording.as_list()
    assert "could not upload" in str(error.value)
    seen = str(error.value) + out.getvalue() + err.getvalue() + caplog.text
    assert wrong not in seen and azurite.account_key not in seen
    assert recorded == [] and azurite.objects(container) == {}


@pytest.mark.controlplane
def test_the_operators_driver_takes_its_azure_uploads_along(
    azurite, container, tmp_path: Path, kubeconfig, namespace, kube_admin, monkeypatch
):
    conf = {"spark.kubernetes.file.upload.path": upload_path(azurite, container)}
    operator_upload_goes_with_the_driver(
        tmp_path, connection_for(monkeypatch, kubeconfig), namespace, kube_admin, conf,
        lambda: azurite.objects(container), secret=azurite.account_key,
    )  # fmt: skip
