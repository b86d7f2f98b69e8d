"""The connection form: provider_info metadata (Airflow 3.2+) and the hook's methods (older
Airflow) say the same thing, and Airflow's own ProvidersManager accepts the metadata.
test_connection against a scripted API server."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from wtforms import BooleanField, PasswordField, StringField

from airflow_provider_sparkk8s.hooks.spark_k8s import (
    REQUIRED_ACCESS,
    SECRET_EXTRAS,
    SparkK8sHook,
    connection_report,
)
from airflow_provider_sparkk8s.kube.paths import Access
from airflow_provider_sparkk8s.provider_info import provider_info
from airflow_provider_sparkk8s.services.cluster_access.permissions import (
    KUEUE_ACCESS,
    SUBMITTER_PERMISSIONS,
)
from airflow_provider_sparkk8s.version_compat import AIRFLOW_V_3_2_PLUS
from tests.kube.fakeapi import FakeApiServer, Recorded, Reply

REPO = Path(__file__).resolve().parents[2]


def connection_type() -> dict:
    (entry,) = provider_info()["connection-types"]
    return entry


def test_connection_type_metadata() -> None:
    entry = connection_type()
    assert entry["connection-type"] == SparkK8sHook.conn_type == "spark_k8s"
    assert entry["hook-name"] == SparkK8sHook.hook_name == "Spark on Kubernetes"
    assert entry["hook-class-name"] == (f"{SparkK8sHook.__module__}.{SparkK8sHook.__qualname__}")
    assert SparkK8sHook.default_conn_name == "spark_k8s_default"
    hooks = provider_info()["hooks"]
    assert [m for h in hooks for m in h["python-modules"]] == [SparkK8sHook.__module__]


def test_conn_fields_and_legacy_widgets_agree() -> None:
    fields = connection_type()["conn-fields"]
    widgets = SparkK8sHook.get_connection_form_widgets()
    assert list(widgets) == list(fields)
    for name, widget in widgets.items():
        declared = fields[name]
        schema = declared["schema"]
        assert widget.args[0] == declared["label"], name
        assert widget.kwargs["description"] == declared["description"], name
        if schema.get("format") == "password":
            assert widget.field_class is PasswordField, name
        elif "boolean" in schema["type"]:
            assert widget.field_class is BooleanField, name
        else:
            assert widget.field_class is StringField, name


def test_secret_fields_are_password_fields() -> None:
    fields = connection_type()["conn-fields"]
    secret = {name for name, f in fields.items() if f["schema"].get("format") == "password"}
    assert secret == set(SECRET_EXTRAS) == {"kube_config_secret", "token", "client_private_key"}


def test_ui_field_behaviour_agrees() -> None:
    declared = connection_type()["ui-field-behaviour"]
    legacy = SparkK8sHook.get_ui_field_behaviour()
    assert legacy == {
        "hidden_fields": declared["hidden-fields"],
        "relabeling": declared["relabeling"],
        "placeholders": declared["placeholders"],
    }
    fields = set(connection_type()["conn-fields"])
    standard = {"host", "port", "schema", "login", "password", "extra", "description"}
    assert set(declared["placeholders"]) <= fields | standard


@pytest.mark.skipif(
    not AIRFLOW_V_3_2_PLUS, reason="Airflow < 3.2 builds the form from the hook's methods"
)
def test_airflow_providers_manager_reads_the_metadata_without_the_hook_methods() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calling the deprecated hook methods would warn
        widgets = manager.connection_form_widgets
        behaviours = manager.field_behaviours
    ours = {k: v for k, v in widgets.items() if k.startswith("extra__spark_k8s__")}
    assert len(ours) == len(connection_type()["conn-fields"])
    sensitive = {k.removeprefix("extra__spark_k8s__") for k, v in ours.items() if v.is_sensitive}
    assert sensitive == set(SECRET_EXTRAS)
    assert ours["extra__spark_k8s__token"].field["schema"]["title"] == "Bearer token"
    assert behaviours["spark_k8s"]["relabeling"] == {"host": "API server URL"}
    assert "extra__spark_k8s__namespace" in behaviours["spark_k8s"]["placeholders"]


def test_airflow_cli_lists_the_hook(tmp_path: Path) -> None:
    env = {"AIRFLOW_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    airflow = [sys.executable, "-m", "airflow"]
    result = subprocess.run(
        [*airflow, "providers", "hooks", "--output", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=True,
    )
    # Airflow 3.0 prints start-up log lines before the JSON document.
    document = [line for line in result.stdout.splitlines() if line.startswith("[{")][-1]
    hooks = {h["connection_type"]: h for h in json.loads(document)}
    assert hooks["spark_k8s"]["class"] == "airflow_provider_sparkk8s.hooks.spark_k8s.SparkK8sHook"


# --------------------------------------------------------------------------- test_connection


def review_server(denied: set[tuple[str, str]]) -> FakeApiServer:
    def handler(request: Recorded) -> Reply:
        if request.path == "/version":
            return Reply(200, {"gitVersion": "v1.31.0"})
        attributes = json.loads(request.body)["spec"]["resourceAttributes"]
        resource = attributes["resource"] + (
            f"/{attributes['subresource']}" if attributes.get("subresource") else ""
        )
        allowed = (attributes["verb"], resource) not in denied
        return Reply(
            201,
            {
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes},
                "status": {"allowed": allowed},
            },
        )

    return FakeApiServer(handler)


def use_connection(monkeypatch: pytest.MonkeyPatch, url: str, **extra: str) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_TESTED",
        json.dumps(
            {"conn_type": "spark_k8s", "host": url, "extra": {"namespace": "jobs", **extra}}
        ),
    )


def test_test_connection_all_granted(monkeypatch: pytest.MonkeyPatch) -> None:
    with review_server(set()) as server:
        use_connection(monkeypatch, server.url, token="good-token-123")
        ok, message = SparkK8sHook("tested").test_connection()
    assert ok, message
    assert "v1.31.0" in message and str(len(REQUIRED_ACCESS)) in message
    reviews = [json.loads(r.body) for r in server.requests if r.method == "POST"]
    assert {r["spec"]["resourceAttributes"]["namespace"] for r in reviews} == {"jobs"}
    # Every permission of the table is asked for, the feature-dependent ones too.
    assert len(reviews) == len(SUBMITTER_PERMISSIONS) == len(REQUIRED_ACCESS) + 15 == 35
    assert {
        (
            r["spec"]["resourceAttributes"]["verb"],
            r["spec"]["resourceAttributes"]["resource"],
            r["spec"]["resourceAttributes"].get("subresource", ""),
        )
        for r in reviews
    } >= {
        ("watch", "pods", ""),
        ("get", "pods", "log"),
        ("patch", "networkpolicies", ""),
        ("get", "configmaps", ""),
        ("create", "persistentvolumeclaims", ""),
        ("create", "poddisruptionbudgets", ""),
    }


def test_test_connection_names_each_missing_permission(monkeypatch: pytest.MonkeyPatch) -> None:
    with review_server({("watch", "pods"), ("get", "pods/log"), ("delete", "secrets")}) as server:
        use_connection(monkeypatch, server.url)
        ok, message = SparkK8sHook("tested").test_connection()
    assert not ok
    assert "3 of 20 permissions are missing in namespace 'jobs'" in message
    for missing in ("watch pods", "get pods/log", "delete secrets"):
        assert missing in message
    assert "Not granted" not in message


def test_test_connection_names_missing_configmap_get(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adoption reads the driver's ConfigMap: the Test button fails without `get configmaps`."""
    with review_server({("get", "configmaps")}) as server:
        use_connection(monkeypatch, server.url)
        ok, message = SparkK8sHook("tested").test_connection()
    assert not ok
    assert "1 of 20 permissions are missing in namespace 'jobs': get configmaps." in message


def test_feature_permissions_are_named_without_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    denied = {(verb, "persistentvolumeclaims") for verb in ("create", "patch", "delete")}
    with review_server(denied) as server:
        use_connection(monkeypatch, server.url)
        ok, message = SparkK8sHook("tested").test_connection()
    assert ok, message
    assert "all 20 permissions the provider needs are granted" in message
    assert (
        "Not granted, needed only by some applications: create persistentvolumeclaims "
        "(for OnDemand volume claims on the driver); patch persistentvolumeclaims"
    ) in message
    assert "podgroups" not in message


def test_test_connection_reports_unreachable_server(monkeypatch: pytest.MonkeyPatch) -> None:
    with review_server(set()) as server:
        url = server.url
    use_connection(monkeypatch, url, token="planted-token-xyz-1")
    ok, message = SparkK8sHook("tested").test_connection()
    assert not ok and "cannot reach the API server" in message and url in message
    assert "planted-token-xyz-1" not in message


def test_connection_report_is_pure() -> None:
    ok, message = connection_report("https://k", {}, "ns", [Access("create", "pods")])
    assert not ok and "create pods" in message and "(unknown version)" in message


def _granted(role: dict) -> set[tuple[str, str, str]]:
    return {
        (verb, group, resource)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_manifest_grants_exactly_the_required_access() -> None:
    documents = list(yaml.safe_load_all((REPO / "docs" / "rbac.yaml").read_text()))
    roles = {d["metadata"]["name"]: d for d in documents if d["kind"] == "Role"}
    bindings = {d["metadata"]["name"]: d for d in documents if d["kind"] == "RoleBinding"}
    assert (
        set(roles)
        == set(bindings)
        == {
            "sparkk8s-submitter",
            "sparkk8s-submitter-kueue",
            "spark-driver",
        }
    )
    # Kueue admission's own Role: the Workload the submitter sends, nothing more.
    assert _granted(roles["sparkk8s-submitter-kueue"]) == {
        (a.verb, a.group, a.resource) for a in KUEUE_ACCESS
    }
    assert (
        bindings["sparkk8s-submitter-kueue"]["subjects"]
        == bindings["sparkk8s-submitter"]["subjects"]
    )
    # The submitter (Airflow, sparkk8s-submit): the table's rows every submission needs
    # (services/cluster_access/permissions.py, what the Test button requires), nothing more.
    needed = {
        (a.verb, a.group, a.resource + (f"/{a.subresource}" if a.subresource else ""))
        for a in REQUIRED_ACCESS
    }
    assert ("get", "", "configmaps") in needed
    assert _granted(roles["sparkk8s-submitter"]) == needed
    # The driver: its executor pods, their ConfigMap, services and claims (the real-Spark
    # tests run their drivers with exactly this Role).
    assert _granted(roles["spark-driver"]) == {
        (verb, "", resource)
        for verb in ("create", "get", "list", "watch", "delete", "deletecollection")
        for resource in ("pods", "services", "configmaps", "persistentvolumeclaims")
    } | {("patch", "", "pods")}  # the exit exception annotation (Spark 4.1+)
    for name, binding in bindings.items():
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": name,
        }
    (account,) = [d for d in documents if d["kind"] == "ServiceAccount"]
    assert bindings["spark-driver"]["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"]}
    ]
    # `kubectl -n X apply -f docs/rbac.yaml` for any X: no object and no subject names one.
    for document in documents:
        assert "namespace" not in document["metadata"], document["metadata"]
        for subject in document.get("subjects", []):
            assert "namespace" not in subject, subject


def test_permission_table_rows_are_distinct() -> None:
    accesses = [p.access for p in SUBMITTER_PERMISSIONS]
    assert len(set(accesses)) == len(accesses)
