"""docs/rbac.yaml as the quickstart applies it, `kubectl -n <namespace> apply -f`, into two
namespaces of the real API server: every object goes in unchanged (it names no namespace),
each namespace's `airflow` service account then passes the connection's Test button there
and only there, and each namespace's `spark` driver account may make its executors there."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from airflow_provider_sparkk8s.hooks.spark_k8s import REQUIRED_ACCESS, SparkK8sHook
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.rbac import RBAC_FILE

pytestmark = pytest.mark.controlplane

_COLLECTIONS = {
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{}/rolebindings",
    "ServiceAccount": "/api/v1/namespaces/{}/serviceaccounts",
}


def apply_as_kubectl_does(admin: k8s.ApiClient, namespace: str) -> None:
    """Each document POSTed to `namespace`'s collection exactly as the file has it."""
    for document in yaml.safe_load_all(RBAC_FILE.read_text()):
        kube.request(admin, "POST", _COLLECTIONS[document["kind"]].format(namespace), document)


def connection_as(
    monkeypatch: pytest.MonkeyPatch, control_plane: Any, namespace: str, account: str, token_ns: str
) -> SparkK8sHook:
    """A hook for `namespace` authenticating as service account `token_ns`/`account`."""
    token = control_plane.request_token(token_ns, account)
    conn_id = f"rbac_{token_ns}_{namespace}".replace("-", "_")
    extra = {"token": token, "ca_cert_file": str(control_plane.ca_file), "namespace": namespace}
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps({"conn_type": "spark_k8s", "host": control_plane.server, "extra": extra}),
    )
    return SparkK8sHook(conn_id)


def may(admin: k8s.ApiClient, user_namespace: str, account: str, verb: str, namespace: str) -> bool:
    """SubjectAccessReview: may service account `user_namespace`/`account` do `verb` pods?"""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{user_namespace}:{account}",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{user_namespace}"],
            "resourceAttributes": {"verb": verb, "resource": "pods", "namespace": namespace},
        },
    }
    answer = kube.request(
        admin, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review
    )
    return bool(answer["status"].get("allowed"))


@pytest.fixture
def other_namespace(control_plane: Any, kube_admin: k8s.ApiClient, namespace: str) -> Any:
    name = f"{namespace[:50]}-b"
    kube.request(kube_admin, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        yield name
    finally:
        kube.request(kube_admin, "DELETE", f"/api/v1/namespaces/{name}")


def test_documented_rbac_applies_unchanged_to_any_namespace(  # type: ignore[no-untyped-def]
    control_plane,
    namespace: str,
    other_namespace: str,
    kube_admin: k8s.ApiClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    both = (namespace, other_namespace)
    for target in both:
        apply_as_kubectl_does(kube_admin, target)
        # The binding's subject, the `airflow` service account of that namespace.
        kube.request(
            kube_admin,
            "POST",
            f"/api/v1/namespaces/{target}/serviceaccounts",
            {"metadata": {"name": "airflow"}},
        )
    for home in both:
        for target in both:
            hook = connection_as(monkeypatch, control_plane, target, "airflow", home)

            def settled(hook: SparkK8sHook = hook, granted: bool = home == target) -> Any:
                ok, message = hook.test_connection()
                return (ok, message) if ok == granted else None

            _, message = wait_for(settled, 30, f"{home}/airflow's review in {target}")
            if home == target:
                assert f"all {len(REQUIRED_ACCESS)} permissions" in message
                assert f"namespace {target!r}" in message
            else:  # a binding in one namespace grants nothing in another
                total = len(REQUIRED_ACCESS)
                assert f"{total} of {total} permissions are missing" in message
            hook.close()
            # The driver's account: its executors in its own namespace, nowhere else.
            for verb in ("create", "watch", "deletecollection"):
                assert may(kube_admin, home, "spark", verb, target) == (home == target)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl on PATH")
def test_kubectl_applies_the_file_as_the_quickstart_says(  # type: ignore[no-untyped-def]
    control_plane, namespace: str, other_namespace: str, kube_admin: k8s.ApiClient
) -> None:
    """The quickstart's own command, with the real kubectl, into both namespaces."""
    for target in (namespace, other_namespace):
        applied = subprocess.run(
            ["kubectl", "--kubeconfig", str(control_plane.admin_kubeconfig), "-n", target,
             "apply", "-f", str(RBAC_FILE)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert applied.returncode == 0, applied.stderr
        objects = [o for o in yaml.safe_load_all(RBAC_FILE.read_text()) if o]
        assert applied.stdout.count("created") == len(objects) == 7, applied.stdout
    both = (namespace, other_namespace)
    expected = {
        (home, account, target): home == target
        for home in both
        for target in both
        for account in ("spark", "airflow")
    }

    def answers() -> dict[tuple[str, str, str], bool] | None:
        verbs = {"spark": "create", "airflow": "watch"}  # executors; following drivers
        seen = {key: may(kube_admin, key[0], key[1], verbs[key[1]], key[2]) for key in expected}
        return seen if seen == expected else None

    # The authorizer sees new Roles through its informers: wait until it does.
    wait_for(answers, 30, "each namespace's accounts granted there and only there")
