"""Least privilege against the real API server: docs/rbac.yaml is enough to submit and
monitor an application, and a token without it fails naming the missing permission."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.hooks.spark_k8s import REQUIRED_ACCESS, SparkK8sHook
from airflow_provider_sparkk8s.kube.paths import resource_path
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.submit.send import submit
from airflow_provider_sparkk8s.submission import naming, render
from airflow_provider_sparkk8s.submission.conf import MainAppResource
from testenv.harness.waiting import wait_for
from testenv.rbac import without as rbac_without

pytestmark = pytest.mark.controlplane

RBAC = Path(__file__).resolve().parents[2] / "docs" / "rbac.yaml"


def bind_documented_role(
    kube_admin: k8s.ApiClient,
    namespace: str,
    account: str,
    drop_group: str | None = None,
    drop_verb: tuple[str, str] | None = None,
) -> None:
    """docs/rbac.yaml's submitter Role, pointed at `namespace` and `account` (minus one API
    group's rules, or one (verb, resource))."""
    documents = {
        (d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(RBAC.read_text())
    }
    role = documents[("Role", "sparkk8s-submitter")]
    binding = documents[("RoleBinding", "sparkk8s-submitter")]
    role["metadata"]["namespace"] = binding["metadata"]["namespace"] = namespace
    role["rules"] = [r for r in role["rules"] if drop_group not in r["apiGroups"]]
    if drop_verb is not None:
        verb, resource = drop_verb  # of the core API group
        (role,) = rbac_without([role], role["metadata"]["name"], "", resource, verb)
    binding["subjects"] = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    rbac = k8s.RbacAuthorizationV1Api(kube_admin)
    rbac.create_namespaced_role(namespace, role)
    rbac.create_namespaced_role_binding(namespace, binding)


def service_account_connection(
    monkeypatch: pytest.MonkeyPatch,
    control_plane: Any,
    kube_admin: k8s.ApiClient,
    namespace: str,
    account: str,
) -> tuple[str, str]:
    """A `spark_k8s` connection authenticating as a new service account: (conn id, token)."""
    k8s.CoreV1Api(kube_admin).create_namespaced_service_account(
        namespace,
        {"metadata": {"name": account}},  # type: ignore[arg-type]  # the client takes dicts
    )
    token = wait_for(
        lambda: control_plane.request_token(namespace, account), 30, f"a token for {account}"
    )
    conn_id = f"sa_{account}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps(
            {
                "conn_type": "spark_k8s",
                "host": control_plane.server,
                "extra": {
                    "token": token,
                    "ca_cert_file": str(control_plane.ca_file),
                    "namespace": namespace,
                },
            }
        ),
    )
    return conn_id, token


def rendered_application(namespace: str, server: str) -> render.RenderedSubmission:
    conf = render.prepare(
        {
            "spark.master": f"k8s://{server}",
            "spark.kubernetes.namespace": namespace,
            "spark.kubernetes.container.image": "apache/spark:4.0.0",
            "spark.app.name": "pi",
            "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/run-ms": "300",
        },
        main_app_resource=MainAppResource("java", "local:///opt/spark/examples/jars/e.jar"),
        main_class="org.apache.spark.examples.SparkPi",
        ids=naming.new_submission_ids(),
    )
    return render.render(conf)


def test_documented_role_can_submit_and_monitor(  # type: ignore[no-untyped-def]
    control_plane,
    namespace: str,
    kube_admin: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    conn_id, token = service_account_connection(
        monkeypatch, control_plane, kube_admin, namespace, "submitter"
    )
    bind_documented_role(kube_admin, namespace, "submitter")
    hook = SparkK8sHook(conn_id)

    def granted_report() -> tuple[bool, str] | None:
        report = hook.test_connection()
        return report if report[0] else None

    ok, message = wait_for(granted_report, 30, "the Role to be visible to the authorizer")
    assert ok and f"all {len(REQUIRED_ACCESS)} permissions" in message and "v1.35" in message

    client = hook.get_client()
    application = rendered_application(namespace, control_plane.server)
    result = submit(client, application)
    assert result.created[0].startswith("Pod/")

    pods = resource_path("v1", "Pod", namespace)
    selector = {"labelSelector": f"spark-app-selector={result.app_id}"}
    listed = client.request("GET", pods, params=selector)
    assert [p["metadata"]["name"] for p in listed["items"]] == [result.driver_pod_name]
    phase = listed["items"][0]["status"].get("phase")
    # Adoption and the uploads' removal read the driver's spark.properties back (get
    # configmaps): the documented Role lacked it (issue 29, defect 3).
    properties = DriverPods(client).driver_properties(listed["items"][0])
    assert properties is not None and properties["spark.app.name"] == "pi"
    params = {
        **selector,
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "timeoutSeconds": 60,
    }
    if phase != "Succeeded":
        for event in client.watch(pods, params):
            if (
                event["type"] != "BOOKMARK"
                and event["object"]["status"].get("phase") == "Succeeded"
            ):
                phase = "Succeeded"
                break
    assert phase == "Succeeded"
    client.request("DELETE", resource_path("v1", "Pod", namespace, result.driver_pod_name))
    out, err = capfd.readouterr()
    for captured in (caplog.text, out, err, repr(hook.get_settings()), message):
        assert token not in captured
    hook.close()


def test_token_without_the_role_fails_naming_the_permission(  # type: ignore[no-untyped-def]
    control_plane,
    namespace: str,
    kube_admin: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn_id, _ = service_account_connection(
        monkeypatch, control_plane, kube_admin, namespace, "nobody"
    )
    hook = SparkK8sHook(conn_id)
    ok, message = hook.test_connection()
    assert not ok
    assert f"{len(REQUIRED_ACCESS)} of {len(REQUIRED_ACCESS)} permissions are missing" in message
    assert "create pods" in message and "get pods/log" in message
    with pytest.raises(SubmissionError) as caught:
        submit(hook.get_client(), rendered_application(namespace, control_plane.server))
    assert f"missing permission to create pods in namespace '{namespace}'" in str(caught.value)
    hook.close()


def test_role_without_network_policies_names_them_and_rolls_back(  # type: ignore[no-untyped-def]
    control_plane,
    namespace: str,
    kube_admin: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn_id, _ = service_account_connection(
        monkeypatch, control_plane, kube_admin, namespace, "partial"
    )
    bind_documented_role(kube_admin, namespace, "partial", drop_group="networking.k8s.io")
    hook = SparkK8sHook(conn_id)

    def partial_report() -> tuple[bool, str] | None:
        report = hook.test_connection()
        return report if "3 of" in report[1] else None

    ok, message = wait_for(partial_report, 30, "the partial Role to be visible")
    assert not ok
    for verb in ("create", "patch", "delete"):
        assert f"{verb} networkpolicies.networking.k8s.io" in message
    with pytest.raises(SubmissionError) as caught:
        submit(hook.get_client(), rendered_application(namespace, control_plane.server))
    assert "networkpolicies.networking.k8s.io" in str(caught.value)
    left = k8s.CoreV1Api(kube_admin).list_namespaced_pod(namespace).items
    assert [p.metadata.name for p in left if p.metadata.deletion_timestamp is None] == []  # type: ignore[union-attr]
    hook.close()


def test_test_connection_as_admin(
    control_plane,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
    kubeconfig: Path,
    namespace: str,
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ADMIN_KUBECONFIG",
        json.dumps({"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}),
    )
    hook = SparkK8sHook("admin_kubeconfig")
    assert hook.get_namespace() == namespace
    ok, message = hook.test_connection()
    assert ok, message
    assert message.startswith("Connected to Kubernetes v1.35")
    assert f"namespace {namespace!r}" in message
    hook.close()


def test_role_without_configmap_get_is_named_and_adoption_is_refused(  # type: ignore[no-untyped-def]
    control_plane,
    namespace: str,
    kube_admin: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A submitter lacking one permission the operator uses: the Test button names exactly
    that one, and the request that needs it fails naming it too."""
    conn_id, _ = service_account_connection(
        monkeypatch, control_plane, kube_admin, namespace, "nocmget"
    )
    bind_documented_role(kube_admin, namespace, "nocmget", drop_verb=("get", "configmaps"))
    hook = SparkK8sHook(conn_id)

    def partial_report() -> tuple[bool, str] | None:
        report = hook.test_connection()
        return report if "1 of" in report[1] else None

    ok, message = wait_for(partial_report, 30, "the Role without get configmaps to be visible")
    assert not ok
    assert (
        f"1 of {len(REQUIRED_ACCESS)} permissions are missing in namespace {namespace!r}: "
        "get configmaps."
    ) in message
    client = hook.get_client()
    result = submit(client, rendered_application(namespace, control_plane.server))
    pod = DriverPods(client).get(namespace, result.driver_pod_name)
    assert pod is not None
    with pytest.raises(KubeApiError) as caught:
        DriverPods(client).driver_properties(pod)
    assert caught.value.status == 403
    assert f"missing permission to get configmaps in namespace '{namespace}'" in str(caught.value)
    hook.close()
