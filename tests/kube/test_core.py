"""The senders' shared core: request building, retry rules and backoff, as plain functions."""

from __future__ import annotations

import json
import random
import ssl

import httpx
import pytest

from airflow_provider_sparkk8s.kube.async_client import transport_failure
from airflow_provider_sparkk8s.kube.core import (
    APPLY_PATCH,
    METADATA_LIST,
    RetryPolicy,
    backoff_delay,
    build_request,
    connection_error,
    decode_json,
    retry_delay,
    should_retry_status,
    should_retry_transport,
)
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure


def test_build_request_json_patch_defaults_to_merge_patch() -> None:
    request = build_request("patch", "/api/v1/namespaces/ns/pods/p", json={"a": 1})
    assert request.method == "PATCH"
    assert request.content == b'{"a":1}'
    assert request.content_type == "application/merge-patch+json"
    assert not request.idempotent


def test_a_request_asks_for_json_unless_it_names_its_own_accept() -> None:
    assert build_request("GET", "/x").headers()["Accept"] == "application/json, */*"
    metadata = build_request("GET", "/x", accept=METADATA_LIST).headers()["Accept"]
    assert metadata.startswith("application/json;as=PartialObjectMetadataList;g=meta.k8s.io")


def test_build_request_apply_is_idempotent_post_is_not() -> None:
    apply = build_request("PATCH", "/x", content="a: 1", content_type=APPLY_PATCH)
    assert apply.idempotent and apply.content == b"a: 1"
    assert not build_request("POST", "/x", json={}).idempotent
    assert build_request("DELETE", "/x").idempotent
    with pytest.raises(TypeError):
        build_request("POST", "/x", json={}, content="y", content_type="text/plain")
    with pytest.raises(ValueError, match="must be absolute"):
        build_request("GET", "api/v1")


def test_retry_rules_by_method_and_status() -> None:
    post = build_request("POST", "/x", json={})
    get = build_request("GET", "/x")
    assert should_retry_status(post, 429) and should_retry_status(get, 429)
    assert not should_retry_status(post, 503) and should_retry_status(get, 503)
    assert not should_retry_status(get, 404) and not should_retry_status(get, 409)
    connect = TransportFailure("ConnectError", ConnectionRefusedError(), sent=False)
    read = TransportFailure("ReadError", ConnectionResetError(), sent=True)
    assert should_retry_transport(post, connect) and should_retry_transport(get, read)
    assert not should_retry_transport(post, read)
    # The async client's httpx failures read the same way.
    assert should_retry_transport(post, transport_failure(httpx.ConnectError("refused")))
    assert not should_retry_transport(post, transport_failure(httpx.ReadError("reset")))
    tls = TransportFailure("ConnectError", ssl.SSLCertVerificationError(), sent=False)
    assert not should_retry_transport(get, tls)


def test_a_timeout_inside_tls_is_a_transport_failure_not_a_tls_one() -> None:
    # A read that times out while TLS waits for bytes (an API server blocked on a stopped
    # etcd, a black-holed link) carries SSLWantReadError in its context: retried, and not
    # described as a TLS problem.
    get = build_request("GET", "/x")
    try:
        try:
            raise ssl.SSLWantReadError(2, "The operation did not complete (read)")
        except ssl.SSLWantReadError:
            raise httpx.ReadTimeout("The read operation timed out") from None
    except httpx.ReadTimeout as error:
        error.__context__ = ssl.SSLWantReadError()
        timeout = transport_failure(error)
    assert should_retry_transport(get, timeout)
    settings = ClientSettings(server="https://127.0.0.1:6443")
    message = str(connection_error(get, timeout, settings))
    assert "TLS" not in message and "ReadTimeout" in message


def test_backoff_grows_is_capped_and_honours_retry_after() -> None:
    policy = RetryPolicy(base_delay=0.1, max_delay=1.0, max_retry_after=3.0)
    rng = random.Random(1)
    delays = [retry_delay(policy, attempt, rng=rng.random) for attempt in range(1, 9)]
    assert 0.05 <= delays[0] <= 0.1
    assert all(0.5 <= d <= 1.0 for d in delays[4:])  # capped at max_delay, never below half
    assert 2.0 <= retry_delay(policy, 1, "2", rng=rng.random) <= 2.05
    assert retry_delay(policy, 1, "120", rng=rng.random) <= 3.05  # capped


def test_backoff_is_capped_and_jittered() -> None:
    # The store's reconnects use the same backoff as request retries.
    assert backoff_delay(1, 0.5, 30, rng=lambda: 0.0) == 0.25
    assert backoff_delay(1, 0.5, 30, rng=lambda: 1.0) == 0.5
    assert backoff_delay(20, 0.5, 30, rng=lambda: 1.0) == 30
    assert backoff_delay(20, 0.5, 30, rng=lambda: 0.0) == 15


LIST_REQUEST = build_request("GET", "/api/v1/namespaces/ns/pods")


def _names(pod):
    return {"name": pod["metadata"]["name"]}


def test_a_list_is_decoded_item_by_item_through_the_view() -> None:
    body = {
        "kind": "PodList",
        "metadata": {"resourceVersion": "42"},
        "items": [{"metadata": {"name": f"p{i}", "uid": str(i)}, "spec": {}} for i in range(3)],
    }
    seen = []

    def view(item):
        seen.append(item)
        return _names(item)

    for text in (json.dumps(body), json.dumps(body, indent=2), json.dumps(body) + "\n"):
        seen.clear()
        decoded = decode_json(LIST_REQUEST, text.encode(), view)
        assert decoded == {**body, "items": [{"name": "p0"}, {"name": "p1"}, {"name": "p2"}]}
        assert seen == body["items"]  # every item whole, one call each
    assert decode_json(LIST_REQUEST, b'{"items":[]}', view) == {"items": []}
    assert decode_json(LIST_REQUEST, b" { } ", view) == {}
    assert decode_json(LIST_REQUEST, b'{"items":null,"x":"\xc3\xa9"}', view) == {
        "items": None,
        "x": "\u00e9",
    }


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1 "b":2}',
        '{"a":1,}',
        '{"items":[{}{}]}',
        '{"items":[1,]}',
        '{"items":[1 2]}',
        '{"items":[',
        '{"a":1}x',
        "{1:2}",
        "[1]",
        "nul",
    ],
)
def test_a_malformed_list_is_an_invalid_response_with_a_view(text: str) -> None:
    from airflow_provider_sparkk8s.errors import KubeApiError

    with pytest.raises(KubeApiError, match="not JSON"):
        decode_json(LIST_REQUEST, text.encode(), lambda item: item)


def test_a_long_list_is_decoded_in_steps_that_let_others_run() -> None:
    from airflow_provider_sparkk8s.kube.core import ITEMS_PER_STEP, decode_list_steps

    items = [{"metadata": {"name": f"p{i}"}} for i in range(2 * ITEMS_PER_STEP + 1)]
    steps = decode_list_steps(LIST_REQUEST, json.dumps({"items": items}).encode(), _names)
    paused = 0
    decoded = None
    while decoded is None:
        try:
            next(steps)
            paused += 1
        except StopIteration as done:
            decoded = done.value
    assert decoded == {"items": [_names(item) for item in items]}
    assert paused == 2
