"""What both senders share: the Authorization header from the token source, a watch's read
timeout, and one request's tries (retry or raise, after an error or a status; one more try
after a 401 when the token file changed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError
from airflow_provider_sparkk8s.kube.request import build_request
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.sender import Attempts, Refusal, SenderBase
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure

POLICY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
GET = build_request("GET", "/api/v1/namespaces/jobs/pods")
POST = build_request("POST", "/api/v1/namespaces/jobs/pods", json={})


@pytest.fixture
def sender(monkeypatch: pytest.MonkeyPatch) -> SenderBase:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    return SenderBase(ClientSettings(server="http://127.0.0.1:8001", token="abc"), POLICY)


def test_settings_read_once_plain_http_has_no_tls_and_requests_carry_the_token(
    sender: SenderBase,
) -> None:
    assert sender.tls is None and sender.proxy is None and sender.retry is POLICY
    headers = sender.headers_for(POST)
    assert headers["Authorization"] == "Bearer abc"
    assert headers["Content-Type"] == "application/json"


def test_a_watch_waits_for_the_servers_timeout_plus_slack_else_an_hour(sender: SenderBase) -> None:
    assert sender.watch_read_timeout({"timeoutSeconds": 30}) == 30 + 10.0
    assert sender.watch_read_timeout({}) == 3600.0


def test_a_retriable_status_waits_then_the_last_try_raises(sender: SenderBase) -> None:
    tries = Attempts(sender, GET)
    unavailable = Refusal(503, b"", "Service Unavailable", None)
    delays = []
    for attempt in (1, 2):
        tries.attempt = attempt
        delays.append(tries.after_status(unavailable))
    assert all(0 < delay <= POLICY.max_delay for delay in delays)
    tries.attempt = 3
    with pytest.raises(KubeApiError) as raised:
        tries.after_status(unavailable)
    assert raised.value.status == 503


def test_retry_after_is_honoured_and_a_post_is_not_retried_on_5xx(sender: SenderBase) -> None:
    tries = Attempts(sender, POST)
    tries.attempt = 1
    assert 2.0 <= tries.after_status(Refusal(429, b"", "Too Many Requests", "2")) < 2.1
    with pytest.raises(KubeApiError):
        tries.after_status(Refusal(500, b"", "Internal Server Error", None))


def test_a_connection_that_never_left_is_retried_even_for_post(sender: SenderBase) -> None:
    tries = Attempts(sender, POST)
    tries.attempt = 1
    assert tries.after_error(TransportFailure("ConnectError", OSError("refused"), sent=False)) > 0
    with pytest.raises(KubeConnectionError, match="ReadTimeout"):
        tries.after_error(TransportFailure("ReadTimeout", TimeoutError(), sent=True))


def test_a_401_after_the_token_file_changed_gets_one_more_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    sender = SenderBase(ClientSettings(server="http://127.0.0.1:8001", token_file=str(token)))
    assert sender.headers_for(GET)["Authorization"] == "Bearer old"
    tries = Attempts(sender, GET)
    tries.attempt = 1
    token.write_text("new")
    unauthorized = Refusal(401, b"", "Unauthorized", None)
    assert tries.after_status(unauthorized) == 0.0
    assert tries.attempt == 0 and tries.reauthenticated
    tries.attempt = 1
    with pytest.raises(KubeApiError) as raised:
        tries.after_status(unauthorized)
    assert raised.value.status == 401
