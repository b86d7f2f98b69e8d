"""What both senders share below HTTP: the failure type, finding the TLS fault behind a
failure, and the request line's target (prefix, encoded path, values as the API reads them)."""

from __future__ import annotations

import ssl

import pytest

from airflow_provider_sparkk8s.kube.transport import (
    TransportFailure,
    base_path,
    encode_query,
    query_value,
    request_target,
    tls_failure,
)


def test_a_failure_names_its_kind_and_cause_and_whether_it_was_sent() -> None:
    cause = ConnectionRefusedError("refused")
    failure = TransportFailure("ConnectError", cause, sent=False)
    assert str(failure) == "ConnectError: refused"
    assert (failure.kind, failure.cause, failure.sent) == ("ConnectError", cause, False)


def test_the_tls_fault_is_found_through_causes_and_contexts() -> None:
    refused = ssl.SSLCertVerificationError(1, "certificate verify failed")
    wrapper = OSError("handshake failed")
    wrapper.__cause__ = refused
    outer = TimeoutError("gave up")
    outer.__context__ = wrapper
    assert tls_failure(TransportFailure("ConnectError", outer, sent=False)) is refused


@pytest.mark.parametrize(
    "not_a_fault",
    [ssl.SSLWantReadError(), ssl.SSLEOFError(), ssl.SSLZeroReturnError(), OSError("reset")],
)
def test_flow_control_and_closed_peers_are_no_tls_fault(not_a_fault: BaseException) -> None:
    assert tls_failure(TransportFailure("ReadError", not_a_fault, sent=True)) is None


@pytest.mark.parametrize(
    ("value", "written"), [(True, "true"), (False, "false"), (None, ""), (5, "5"), ("a", "a")]
)
def test_query_values_as_the_api_server_reads_them(value: object, written: str) -> None:
    assert query_value(value) == written


def test_a_list_value_repeats_its_key() -> None:
    assert encode_query({"labelSelector": ["a=1", "b=2"], "watch": True}) == (
        "labelSelector=a%3D1&labelSelector=b%3D2&watch=true"
    )


@pytest.mark.parametrize(
    ("server", "prefix"),
    [
        ("https://10.0.0.1:6443", ""),
        ("https://rancher.example/k8s/clusters/c-1/", "/k8s/clusters/c-1"),
    ],
)
def test_base_path_is_the_servers_path_without_a_trailing_slash(server: str, prefix: str) -> None:
    assert base_path(server) == prefix


def test_request_target_encodes_the_path_and_leaves_out_an_empty_query() -> None:
    assert request_target("", "/api/v1/namespaces/jobs/pods/pi:x", {}) == (
        "/api/v1/namespaces/jobs/pods/pi:x"
    )
    assert request_target("/p", "/api/v1/pods", {"limit": 1}) == "/p/api/v1/pods?limit=1"
    assert request_target("", "/api/v1/namespaces/ä/pods", {}) == "/api/v1/namespaces/%C3%A4/pods"
