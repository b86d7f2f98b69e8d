"""The async sender on httpx, with httpx's MockTransport as the API server: the request as
built (path, params, headers, body), retries of an idempotent request, errors with the
Status's reason, plain-text and watch answers, and httpx's failures named as both senders
name them."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient, transport_failure
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.settings import ClientSettings

SERVER = "http://127.0.0.1:8001"


def client_for(
    monkeypatch: pytest.MonkeyPatch, handler: Callable[[httpx.Request], httpx.Response]
) -> tuple[AsyncKubeClient, list[httpx.Request]]:
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    seen: list[httpx.Request] = []

    def recording(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    client = AsyncKubeClient(
        ClientSettings(server=SERVER, token="abc"), RetryPolicy(base_delay=0.001, max_delay=0.002)
    )
    client._http = httpx.AsyncClient(base_url=SERVER, transport=httpx.MockTransport(recording))
    return client, seen


async def test_a_request_sends_params_body_and_token_and_returns_the_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, seen = client_for(monkeypatch, lambda request: httpx.Response(201, json={"ok": 1}))
    async with client:
        answer = await client.request(
            "POST", "/api/v1/namespaces/jobs/pods", params={"dryRun": "All"}, json={"a": 1}
        )
    assert answer == {"ok": 1}
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == f"{SERVER}/api/v1/namespaces/jobs/pods?dryRun=All"
    assert request.headers["authorization"] == "Bearer abc"
    assert json.loads(request.content) == {"a": 1}


async def test_a_get_is_tried_again_after_a_503(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [httpx.Response(503), httpx.Response(200, json={"major": "1"})]
    client, seen = client_for(monkeypatch, lambda request: answers.pop(0))
    async with client:
        assert await client.version() == {"major": "1"}
    assert len(seen) == 2


async def test_a_refusal_raises_with_the_status_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    status = {"kind": "Status", "reason": "NotFound", "message": 'pods "pi" not found'}
    client, _ = client_for(monkeypatch, lambda request: httpx.Response(404, json=status))
    async with client:
        with pytest.raises(KubeApiError) as raised:
            await client.request("GET", "/api/v1/namespaces/jobs/pods/pi")
    assert (raised.value.status, raised.value.reason) == (404, "NotFound")


async def test_text_and_watch_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    events = b'{"type":"ADDED","object":{"kind":"Pod"}}\n\n{"type":"DELETED","object":{}}\n'

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/log"):
            return httpx.Response(200, text="line 1\nline 2\n")
        return httpx.Response(200, content=events)

    client, seen = client_for(monkeypatch, answer)
    async with client:
        log = await client.text("/api/v1/namespaces/jobs/pods/pi/log", {"container": "c"})
        watched = [event async for event in client.watch("/api/v1/namespaces/jobs/pods")]
    assert log == "line 1\nline 2\n"
    assert [event["type"] for event in watched] == ["ADDED", "DELETED"]
    assert seen[1].url.params["watch"] in ("true", "1")


def test_httpx_failures_say_whether_the_request_left() -> None:
    request = httpx.Request("GET", SERVER)
    refused = transport_failure(httpx.ConnectError("refused", request=request))
    assert (refused.kind, refused.sent) == ("ConnectError", False)
    timed_out = transport_failure(httpx.ReadTimeout("slow", request=request))
    assert (timed_out.kind, timed_out.sent) == ("ReadTimeout", True)
