"""A failed answer or connection as the package's error: the Status body's reason and message,
the permission a 403 misses, the credentials a 401 refused, and what a TLS failure was."""

from __future__ import annotations

import json
import ssl

from airflow_provider_sparkk8s.errors import KubeConnectionError, KubeTLSVerificationError
from airflow_provider_sparkk8s.kube.error_mapping import api_error, connection_error
from airflow_provider_sparkk8s.kube.request import build_request
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure

SETTINGS = ClientSettings(
    server="https://10.0.0.1:6443", token_file="/var/run/token", source="connection 'k8s'"
)
CREATE_POD = build_request("POST", "/api/v1/namespaces/jobs/pods", json={})


def status(reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "reason": reason, "message": message}).encode()


def test_a_status_body_gives_the_reason_and_message() -> None:
    error = api_error(
        CREATE_POD, 409, status("AlreadyExists", 'pods "pi" already exists'), "Conflict", SETTINGS
    )
    assert (error.status, error.reason, error.api_message) == (
        409,
        "AlreadyExists",
        'pods "pi" already exists',
    )
    assert (error.method, error.path) == ("POST", "/api/v1/namespaces/jobs/pods")
    assert error.body["kind"] == "Status" and error.missing_permission == ""


def test_a_body_that_is_not_a_status_is_kept_truncated_with_the_http_reason() -> None:
    error = api_error(CREATE_POD, 502, b"<html>" + b"x" * 400, "Bad Gateway", SETTINGS)
    assert error.reason == "Bad Gateway"
    assert error.api_message == ("<html>" + "x" * 400)[:300]
    assert error.body == {}
    assert api_error(CREATE_POD, 503, b"", "Service Unavailable", SETTINGS).api_message == (
        "Service Unavailable"
    )


def test_an_rbac_403_names_the_permission_it_refused_and_that_the_namespace_may_not_exist() -> None:
    refusal = (
        'pods is forbidden: User "alice" cannot create resource "pods" in API group "" '
        'in the namespace "jobs"'
    )
    error = api_error(CREATE_POD, 403, status("Forbidden", refusal), "Forbidden", SETTINGS)
    assert error.missing_permission == "create pods in namespace 'jobs'"
    assert error.api_message == (
        "missing permission to create pods in namespace 'jobs' "
        f"(or the namespace 'jobs' does not exist): {refusal}"
    )


def test_a_quota_403_names_no_permission() -> None:
    refusal = 'pods "pi" is forbidden: exceeded quota: compute, requested: cpu=2'
    error = api_error(CREATE_POD, 403, status("Forbidden", refusal), "Forbidden", SETTINGS)
    assert error.missing_permission == "" and error.api_message == refusal


def test_a_403_without_a_status_names_the_permission_the_request_needs() -> None:
    error = api_error(CREATE_POD, 403, b"forbidden", "Forbidden", SETTINGS)
    assert error.missing_permission == "create pods in namespace 'jobs'"


def test_a_401_names_the_credentials_used_and_where_they_came_from() -> None:
    error = api_error(
        CREATE_POD, 401, status("Unauthorized", "Unauthorized"), "Unauthorized", SETTINGS
    )
    assert error.api_message == (
        "Unauthorized: the API server rejected the credentials "
        "(token file /var/run/token) (from connection 'k8s')"
    )


def test_an_unreachable_server_names_it_the_request_and_the_cause() -> None:
    failure = TransportFailure("connect", ConnectionRefusedError("refused"), sent=False)
    error = connection_error(CREATE_POD, failure, SETTINGS)
    assert type(error) is KubeConnectionError
    assert str(error) == (
        "cannot reach the API server https://10.0.0.1:6443 (POST /api/v1/namespaces/jobs/pods): "
        "connect: refused (from connection 'k8s')"
    )


def test_a_refused_certificate_is_a_tls_verification_error_pointing_at_the_ca() -> None:
    refused = ssl.SSLCertVerificationError(1, "certificate verify failed")
    refused.verify_message = "unable to get local issuer certificate"
    settings = ClientSettings(server="https://10.0.0.1:6443", ca_file="/etc/ca.crt")
    error = connection_error(CREATE_POD, TransportFailure("tls", refused, sent=False), settings)
    assert isinstance(error, KubeTLSVerificationError)
    assert str(error) == (
        "TLS verification of https://10.0.0.1:6443 (POST /api/v1/namespaces/jobs/pods) failed: "
        "unable to get local issuer certificate; check the CA certificate /etc/ca.crt and the "
        "TLS server name"
    )
