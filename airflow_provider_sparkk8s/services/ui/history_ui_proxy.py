"""One Spark UI request served by a Spark History Server once the driver is gone: the I/O
under the plugin's fallback (plugins/spark_ui.py); application/ui/history_ui.py decides.

Plain HTTP to the configured URL (the History Server is not the API server); the page
comes back as the server wrote it, under the base it was told (`X-Forwarded-Context`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import httpx

from airflow_provider_sparkk8s.application.ui.history_ui import (
    FORWARDED_CONTEXT_HEADER,
    browser_location,
    upstream_url,
)
from airflow_provider_sparkk8s.application.ui.live_ui import (
    forwarded_request_headers,
    response_headers,
)
from airflow_provider_sparkk8s.services.ui.spark_ui_proxy import ProxiedAnswer

# response_headers maps the API server's proxy prefix back; no History Server answer has one.
_NO_PROXY_PREFIX = "/\x00"
_TIMEOUT = httpx.Timeout(30.0, connect=10.0)


async def open_history_ui(
    history_server_url: str,
    base: str,
    *,
    method: str,
    rest: str,
    query: str,
    headers: Iterable[tuple[str, str]],
) -> ProxiedAnswer:
    """Send `method` for the History Server path `/rest` and answer as the server did.
    Raises ConnectionError when the server does not answer."""
    url = upstream_url(history_server_url, "/" + rest, query)
    sent = forwarded_request_headers(headers) | {FORWARDED_CONTEXT_HEADER: base}
    client = httpx.AsyncClient(timeout=_TIMEOUT, follow_redirects=False)
    try:
        upstream = await client.send(client.build_request(method, url, headers=sent), stream=True)
    except httpx.TransportError as error:  # refused, timed out: the caller's OSError (502)
        await client.aclose()
        raise ConnectionError(str(error) or type(error).__name__) from None
    except BaseException:
        await client.aclose()
        raise

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        finally:
            await upstream.aclose()
            await client.aclose()

    kept = response_headers(upstream.headers.multi_items(), _NO_PROXY_PREFIX, base)
    return ProxiedAnswer(
        status=upstream.status_code,
        headers=[
            (
                name,
                browser_location(value, history_server_url, base)
                if name.lower() == "location"
                else value,
            )
            for name, value in kept
        ],
        body=body(),
    )
