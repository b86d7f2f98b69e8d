"""The `spark_k8s` connection form in Airflow's own UI, driven in headless chromium.

tests/e2e/browser/connections_ui.mjs clicks through the UI and reports what it saw;
this module starts it against the real stack and the real control plane, and judges.
Screenshots land in the test's temp dir, so a test run leaves the checkout as it was;
`make screenshots` runs this module with SPARKK8S_SCREENSHOT_DIR=docs/screenshots to refresh
the docs' copies on request.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.provider_info import provider_info
from testenv.airflow_stack import ADMIN_USER, AirflowStack
from tests.e2e.browser_driver import run_browser
from tests.e2e.e2e_stack import E2E_TIMINGS

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
# Set by `make screenshots` only: the docs' copies are refreshed on request, never by a test run.
SCREENSHOT_DIR_VARIABLE = "SPARKK8S_SCREENSHOT_DIR"
CONNECTION_ID = "spark_k8s_ui"
MASK = "***"


def spark_k8s_form() -> dict[str, Any]:
    kinds = provider_info()["connection-types"]
    (form,) = [kind for kind in kinds if kind["connection-type"] == "spark_k8s"]
    return dict(form)


@pytest.fixture(scope="module")
def ui_report(
    airflow: AirflowStack, control_plane: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("browser")
    screenshots = Path(os.environ.get(SCREENSHOT_DIR_VARIABLE) or workdir / "screenshots")
    screenshots.mkdir(parents=True, exist_ok=True)
    fill = {
        "API server URL": control_plane.server,
        "Namespace": "default",
        "CA certificate file": str(control_plane.ca_file),
        "Client certificate file": str(control_plane.admin_cert_file),
        # A secret field, typed in so the screenshots show it masked. Base64 as in a
        # kubeconfig's client-key-data: an <input> drops the line breaks of raw PEM.
        "Client key (inline PEM)": base64.b64encode(
            Path(control_plane.admin_key_file).read_bytes()
        ).decode(),
    }
    started = time.monotonic()
    report = run_browser(
        "connections_ui.mjs",
        {
            "baseUrl": airflow.base_url,
            "username": ADMIN_USER,
            "password": airflow.password,
            "connectionId": CONNECTION_ID,
            "connectionTypeLabel": spark_k8s_form()["hook-name"],
            "fill": fill,
            "screenshotDir": str(screenshots),
            "userDataDir": str(workdir / "chromium-profile"),
        },
        workdir,
        timeout=300,
    )
    E2E_TIMINGS["browser: login, create, save, test, edit"] = time.monotonic() - started
    report["filled"] = fill
    report["screenshotDir"] = str(screenshots)
    return report


def by_label(fields: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {field["label"]: field for field in fields}


def test_our_fields_appear_with_their_labels(ui_report: dict[str, Any]) -> None:
    form = spark_k8s_form()
    shown = by_label(ui_report["fields"])
    assert ui_report["selectedType"] == form["hook-name"]
    for name, field in form["conn-fields"].items():
        assert field["label"] in shown, f"{name}: label {field['label']!r} not in the form"
    for standard, label in form["ui-field-behaviour"]["relabeling"].items():
        assert label in shown, f"{standard} should be relabelled {label!r}"
    # Hidden standard fields must not be offered.
    for hidden in ("Login", "Password", "Port", "Schema"):
        assert hidden not in shown


def test_secret_fields_are_masked(ui_report: dict[str, Any]) -> None:
    form = spark_k8s_form()
    shown = by_label(ui_report["fields"])
    fields = form["conn-fields"].values()
    secrets = {f["label"] for f in fields if f["schema"].get("format") == "password"}
    assert {"Kubeconfig (inline)", "Bearer token", "Client key (inline PEM)"} <= secrets
    for label, field in shown.items():
        expected = "password" if label in secrets else None
        if field["tag"] == "input" and field["type"] != "checkbox":
            assert (field["type"] == "password") == (expected == "password"), (label, field)
    # Reopened after saving, the stored key's field is still a password field.
    assert by_label(ui_report["editFields"])["Client key (inline PEM)"]["type"] == "password"


def test_saved_connection_holds_what_was_typed(
    ui_report: dict[str, Any], airflow: AirflowStack
) -> None:
    assert ui_report["save"]["status"] == 201
    with airflow.client() as client:
        stored = client.get(f"/connections/{CONNECTION_ID}").json()
    assert stored["conn_type"] == "spark_k8s"
    assert stored["host"] == ui_report["filled"]["API server URL"]
    extra = json.loads(stored["extra"])
    assert extra["namespace"] == "default"
    assert extra["ca_cert_file"] == ui_report["filled"]["CA certificate file"]
    assert extra["client_cert_file"] == ui_report["filled"]["Client certificate file"]


def test_stored_secrets_do_not_come_back_in_clear(
    ui_report: dict[str, Any], airflow: AirflowStack
) -> None:
    """Neither the REST API nor the edit form may hand a stored secret back. Airflow
    redacts extras by name (`[core] sensitive_var_conn_names` plus its defaults such as
    `token`, `private_key`, `secret`), not by the form's `format: password`."""
    key = ui_report["filled"]["Client key (inline PEM)"]
    with airflow.client() as client:
        stored = client.get(f"/connections/{CONNECTION_ID}").json()
    # Booleans first, so a failure message never prints the key itself.
    in_rest_api = key in stored["extra"]
    in_edit_form = ui_report["editValues"]["Client key (inline PEM)"] == key
    assert not in_rest_api, "GET /api/v2/connections returns client_private_key in clear"
    assert not in_edit_form, "the edit form is filled with the stored key in clear"


def test_test_button_reaches_the_control_plane(ui_report: dict[str, Any]) -> None:
    # The UI posted port 0 for a portless connection (see connections_ui.mjs).
    assert ui_report["testRequestPort"] in (0, None)
    assert ui_report["test"]["status"] == 200, ui_report["test"]
    body = ui_report["test"]["body"]
    assert body["status"] is True, body["message"]
    assert ui_report["filled"]["API server URL"] in body["message"]
    assert "permissions the provider needs are granted" in body["message"]
    assert "Test Connection" in ui_report["testToast"]


def test_screenshots_are_written(ui_report: dict[str, Any]) -> None:
    names = [Path(shot).name for shot in ui_report["screenshots"]]
    assert names == [
        "connection-form-fields.png",
        "connection-form-standard.png",
        "connection-form-extra.png",
        "connection-list.png",
        "connection-test.png",
        "connection-edit.png",
    ]
    for shot in ui_report["screenshots"]:
        assert Path(shot).parent == Path(ui_report["screenshotDir"])
        data = Path(shot).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_screenshots_leave_the_docs_alone(ui_report: dict[str, Any]) -> None:
    """Unless `make screenshots` asked for them, the shots go to the temp dir."""
    if os.environ.get(SCREENSHOT_DIR_VARIABLE):
        pytest.skip(f"{SCREENSHOT_DIR_VARIABLE} is set: the docs' copies are being refreshed")
    docs = (REPO / "docs/screenshots").resolve()
    for shot in ui_report["screenshots"]:
        assert not Path(shot).resolve().is_relative_to(docs), shot
