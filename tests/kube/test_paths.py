"""resource_path, plurals, apply params and the permission a request needs."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.kube.paths import (
    Access,
    access_of,
    apply_params,
    denied_access,
    object_path,
    plural,
    resource_path,
)


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "path"),
    [
        ("v1", "Pod", "driver", "/api/v1/namespaces/ns/pods/driver"),
        ("v1", "Service", "svc", "/api/v1/namespaces/ns/services/svc"),
        ("v1", "ConfigMap", None, "/api/v1/namespaces/ns/configmaps"),
        ("v1", "Secret", "s", "/api/v1/namespaces/ns/secrets/s"),
        ("v1", "PersistentVolumeClaim", "c", "/api/v1/namespaces/ns/persistentvolumeclaims/c"),
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "p",
            "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/p",
        ),
        (
            "scheduling.volcano.sh/v1beta1",
            "PodGroup",
            "g",
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g",
        ),
    ],
)
def test_resource_path(api_version: str, kind: str, name: str | None, path: str) -> None:
    assert resource_path(api_version, kind, "ns", name) == path


def test_cluster_scope_and_subresource() -> None:
    assert (
        resource_path("authorization.k8s.io/v1", "SelfSubjectAccessReview", None)
        == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    )
    assert resource_path("v1", "Pod", "ns", "d", "log") == "/api/v1/namespaces/ns/pods/d/log"
    with pytest.raises(ValueError, match="subresource needs an object name"):
        resource_path("v1", "Pod", "ns", None, "log")


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Ingress", "ingresses"),
        ("Box", "boxes"),
        ("Deployment", "deployments"),
        ("Endpoints", "endpoints"),
    ],
)
def test_generic_plural_rule(kind: str, expected: str) -> None:
    assert plural(kind) == expected


@pytest.mark.parametrize("name", ["a/b", "UPPER", "", "..", "x" * 254, "-lead"])
def test_names_that_would_change_the_url_are_rejected(name: str) -> None:
    with pytest.raises(SparkConfError) as caught:
        resource_path("v1", "Pod", "ns", name)
    assert caught.value.key == "metadata.name"


def test_object_path_uses_metadata_then_fallback_namespace() -> None:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "d"}}
    assert object_path(pod, "fallback") == "/api/v1/namespaces/fallback/pods/d"
    pod["metadata"]["namespace"] = "own"
    assert object_path(pod, "fallback") == "/api/v1/namespaces/own/pods/d"


def test_apply_params() -> None:
    assert apply_params("sparkk8s") == {"fieldManager": "sparkk8s"}
    assert apply_params("sparkk8s", force=True) == {"fieldManager": "sparkk8s", "force": "true"}


@pytest.mark.parametrize(
    ("method", "path", "params", "expected"),
    [
        ("POST", "/api/v1/namespaces/ns/pods", None, Access("create", "pods", namespace="ns")),
        ("GET", "/api/v1/namespaces/ns/pods", None, Access("list", "pods", namespace="ns")),
        (
            "GET",
            "/api/v1/namespaces/ns/pods",
            {"watch": "1"},
            Access("watch", "pods", namespace="ns"),
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/pods/d/log",
            None,
            Access("get", "pods", "", "log", "ns", "d"),
        ),
        (
            "PATCH",
            "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/p",
            None,
            Access("patch", "networkpolicies", "networking.k8s.io", "", "ns", "p"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/ns/configmaps",
            None,
            Access("deletecollection", "configmaps", namespace="ns"),
        ),
        ("DELETE", "/api/v1/namespaces/ns", None, Access("delete", "namespaces", name="ns")),
        ("GET", "/version", None, None),
    ],
)
def test_access_of(method: str, path: str, params: dict | None, expected: Access | None) -> None:
    assert access_of(method, path, params) == expected


def test_access_description_and_review_attributes() -> None:
    access = Access("get", "pods", "", "log", "ns")
    assert access.describe() == "get pods/log in namespace 'ns'"
    assert access.resource_attributes() == {
        "verb": "get",
        "group": "",
        "resource": "pods",
        "subresource": "log",
        "namespace": "ns",
    }


def test_an_rbac_refusal_is_read_back_into_its_permission() -> None:
    message = 'User "u" cannot get resource "pods/log" in API group "" in the namespace "ns"'
    assert denied_access(message) == Access("get", "pods", "", "log", "ns")
    cluster = (
        'User "u" cannot list resource "workloads" in API group "kueue.x-k8s.io" '
        "at the cluster scope"
    )
    assert denied_access(cluster) == Access("list", "workloads", "kueue.x-k8s.io")
    assert denied_access("exceeded quota: q") is None
