"""One Spark UI request sent to the History Server: the path under the server's own URL, the
base told in X-Forwarded-Context, redirects kept under the base, the body streamed as sent,
and a server that does not answer a ConnectionError. httpx's MockTransport plays the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from airflow_provider_sparkk8s.services.ui import history_ui_proxy

HISTORY = "http://history.local:18080/shs"
BASE = "/spark-ui/etl/pi/manual__1/1/history"


class Chunks(httpx.AsyncByteStream):
    """A body that arrives in chunks, not yet read (as a real server's does)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def serve(monkeypatch: pytest.MonkeyPatch, handler: Any) -> list[httpx.Request]:
    seen: list[httpx.Request] = []
    real_client = httpx.AsyncClient

    def recording(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    def client(**kwargs: Any) -> httpx.AsyncClient:
        return real_client(transport=httpx.MockTransport(recording), **kwargs)

    monkeypatch.setattr(history_ui_proxy.httpx, "AsyncClient", client)
    return seen


async def test_the_page_is_asked_under_the_servers_path_with_the_base_forwarded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = serve(
        monkeypatch,
        lambda request: httpx.Response(
            200, headers={"content-type": "text/html"}, stream=Chunks([b"<p>", b"</p>"])
        ),
    )
    answer = await history_ui_proxy.open_history_ui(
        HISTORY, BASE, method="GET", rest="history/app-1/jobs/", query="id=2", headers=[]
    )
    body = b"".join([chunk async for chunk in answer.body])
    assert answer.status == 200 and body == b"<p></p>"
    assert ("content-type", "text/html") in [(k.lower(), v) for k, v in answer.headers]
    (request,) = seen
    assert str(request.url) == "http://history.local:18080/shs/history/app-1/jobs/?id=2"
    assert request.headers["x-forwarded-context"] == BASE


async def test_a_redirect_on_the_history_server_stays_under_the_base(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve(
        monkeypatch,
        lambda request: httpx.Response(
            302, headers={"location": "http://history.local:18080/shs/history/app-1/1/jobs/"}
        ),
    )
    answer = await history_ui_proxy.open_history_ui(
        HISTORY, BASE, method="GET", rest="history/app-1/jobs/", query="", headers=[]
    )
    assert answer.status == 302
    assert {k.lower(): v for k, v in answer.headers}["location"] == (
        f"{BASE}/history/app-1/1/jobs/"
    )


async def test_a_server_that_does_not_answer_is_a_connection_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    serve(monkeypatch, refuse)
    with pytest.raises(ConnectionError, match="connection refused"):
        await history_ui_proxy.open_history_ui(
            HISTORY, BASE, method="GET", rest="", query="", headers=[]
        )
