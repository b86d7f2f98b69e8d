"""The retry rules and backoff, as plain functions over requests and failures."""

from __future__ import annotations

import random
import ssl

import httpx

from airflow_provider_sparkk8s.kube.async_client import transport_failure
from airflow_provider_sparkk8s.kube.error_mapping import connection_error
from airflow_provider_sparkk8s.kube.request import build_request
from airflow_provider_sparkk8s.kube.retries import (
    RetryPolicy,
    backoff_delay,
    retry_delay,
    should_retry_status,
    should_retry_transport,
)
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure


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
