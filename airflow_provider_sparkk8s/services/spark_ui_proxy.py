"""One Spark UI request through kube-apiserver's pod proxy: the I/O under the plugin
(plugins/spark_ui.py); application/spark_ui.py decides the paths and the rewrites."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from airflow_provider_sparkk8s.application.spark_ui import (
    LinkRewriter,
    SparkUiTarget,
    forwarded_request_headers,
    is_html,
    response_headers,
    upstream_path,
)
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient


@dataclass(frozen=True)
class ProxiedAnswer:
    status: int
    headers: list[tuple[str, str]]
    # The body as it arrives, HTML links mapped back; the upstream closes when it ends.
    body: AsyncIterator[bytes]


async def open_spark_ui(
    client: AsyncKubeClient,
    target: SparkUiTarget,
    base: str,
    *,
    method: str,
    rest: str,
    query: str,
    headers: Iterable[tuple[str, str]],
) -> ProxiedAnswer:
    """Send `method` for the UI page `rest` (the path after `base`) and answer as the driver
    did. Raises UnsafePath before any request for a path that would leave the UI."""
    path = upstream_path(target, rest)
    upstream = await client.open_proxied(method, path, query, forwarded_request_headers(headers))
    prefix = target.upstream_prefix
    rewriter = LinkRewriter(prefix, base) if is_html(upstream.headers.get("content-type")) else None

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield rewriter.feed(chunk) if rewriter else chunk
            if rewriter:
                yield rewriter.flush()
        finally:
            await upstream.aclose()

    return ProxiedAnswer(
        status=upstream.status_code,
        headers=response_headers(upstream.headers.multi_items(), prefix, base),
        body=body(),
    )
