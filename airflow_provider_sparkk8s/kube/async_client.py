"""AsyncKubeClient: the async sender (trigger, snapshot store), on httpx.AsyncClient.

Request building (`request`), auth and tries (`sender`), retry rules (`retries`), errors
(`error_mapping`) and decoding (`decoding`) are shared; only sending, sleeping and
streaming are written here. httpx failures become `TransportFailure`, so a retry decision
reads the same for both senders.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, Unpack

# Importing httpx also imports its command-line client (click, rich, pygments): about half
# of httpx's import time, for a `main` we never call. Unless httpx is loaded already, mark
# that module absent; httpx then defines a stub.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
import httpx

from airflow_provider_sparkk8s.kube.decoding import (
    decode_json,
    decode_list_steps,
    decode_watch_line,
    next_step,
)
from airflow_provider_sparkk8s.kube.error_mapping import connection_error
from airflow_provider_sparkk8s.kube.proxy import Proxy
from airflow_provider_sparkk8s.kube.request import (
    KubeRequest,
    build_request,
    watch_params,
)
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.sender import Attempts, Refusal, SenderBase
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.kube.request import RequestFields

log = logging.getLogger(__name__)

# httpx's failures that mean the request never reached the server.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def transport_failure(error: httpx.TransportError) -> TransportFailure:
    return TransportFailure(type(error).__name__, error, sent=not isinstance(error, _NOT_SENT))


class AsyncKubeClient(SenderBase):
    """Asynchronous client (trigger). Same settings, same auth, same retries."""

    def __init__(self, settings: ClientSettings, retry: RetryPolicy | None = None):
        super().__init__(settings, retry)
        # TLS server name: httpcore uses it for both SNI and hostname verification.
        self._extensions = (
            {"sni_hostname": settings.tls_server_name} if settings.tls_server_name else {}
        )
        if self.proxy is not None and self.tls is not None and settings.tls_server_name:
            _pin_server_name(self.tls, settings.tls_server_name)
        self._http = httpx.AsyncClient(
            base_url=settings.server,
            verify=self.tls if self.tls is not None else False,
            timeout=httpx.Timeout(settings.request_timeout, connect=settings.connect_timeout),
            trust_env=False,  # the proxy is chosen by client-go's rules (kube/proxy.py)
            proxy=_httpx_proxy(self.proxy),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(
        self, method: str, path: str, **fields: Unpack[RequestFields]
    ) -> dict[str, Any]:
        """The answer's JSON; `each_item` keeps only its view of each of a list's items,
        decoded one at a time (`decode_json`)."""
        request, each_item = build_request(method, path, **fields), fields.get("each_item")
        response = await self._send(request)
        if each_item is None:
            return decode_json(request, response.content)
        steps = decode_list_steps(request, response.content, each_item)
        while True:
            decoded = next_step(steps)
            if decoded is not None:
                return decoded
            await asyncio.sleep(0)  # the loop serves the watch and the triggers meanwhile

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        return (await self._send(build_request("GET", path, params=params))).text

    async def version(self) -> dict[str, Any]:
        return await self.request("GET", "/version")

    async def stream_lines(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> AsyncIterator[str]:
        """As `KubeClient.stream_lines`: ends when the server closes or the connection breaks."""
        request = build_request("GET", path, params=params)
        response = await self._send(
            request,
            stream=True,
            read_timeout=read_timeout or self.watch_read_timeout(request.params),
        )
        try:
            async for line in response.aiter_lines():
                yield line
        except httpx.TransportError as error:
            log.debug("stream %s ended: %s", path, type(error).__name__)
        finally:
            await response.aclose()

    async def open_proxied(
        self, method: str, path: str, query: str, headers: Mapping[str, str]
    ) -> httpx.Response:
        """One proxied request (pods/proxy, services/proxy), streamed and tried once: its
        answer is the proxied server's, whatever the status. The caller closes it."""
        request = build_request(method, path)
        await self.tokens.aprepare()
        sent = {**self.headers_for(request), **headers}
        http_request = self._http.build_request(
            method,
            path + (f"?{query}" if query else ""),
            headers=sent,
            extensions=dict(self._extensions),
        )
        try:
            return await self._http.send(http_request, stream=True)
        except httpx.TransportError as error:
            failure = transport_failure(error)
            raise connection_error(request, failure, self.settings) from error

    async def watch(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        lines = self.stream_lines(path, watch_params(params), read_timeout=read_timeout)
        async for line in lines:
            event = decode_watch_line(line)
            if event is not None:
                yield event

    def _http_request(self, request: KubeRequest, read_timeout: float | None) -> httpx.Request:
        extensions: dict[str, Any] = dict(self._extensions)
        if read_timeout is not None:
            extensions["timeout"] = httpx.Timeout(
                self.settings.request_timeout,
                connect=self.settings.connect_timeout,
                read=read_timeout,
            ).as_dict()
        return self._http.build_request(
            request.method,
            request.path,
            params=request.params,
            content=request.content,
            headers=self.headers_for(request),
            extensions=extensions,
        )

    async def _send(
        self, request: KubeRequest, *, stream: bool = False, read_timeout: float | None = None
    ) -> httpx.Response:
        attempts = Attempts(self, request)
        while True:
            attempts.attempt += 1
            await self.tokens.aprepare()  # an exec plugin runs here, off the event loop
            try:
                response = await self._http.send(
                    self._http_request(request, read_timeout), stream=stream
                )
            except httpx.TransportError as error:
                delay = attempts.after_error(transport_failure(error))
            else:
                if response.status_code < 400:
                    return response
                if stream:
                    await response.aread()
                    await response.aclose()
                delay = attempts.after_status(_refusal(response))
            if delay:
                await asyncio.sleep(delay)


def _refusal(response: httpx.Response) -> Refusal:
    return Refusal(
        response.status_code,
        response.content,
        response.reason_phrase,
        response.headers.get("Retry-After"),
    )


def _httpx_proxy(proxy: Proxy | None) -> httpx.Proxy | None:
    if proxy is None:
        return None
    headers = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else None
    return httpx.Proxy(proxy.url, headers=headers)


def _pin_server_name(context: ssl.SSLContext, name: str) -> None:
    """Every TLS session of `context` uses `name` for SNI and hostname verification.

    httpcore's CONNECT tunnel ignores the `sni_hostname` extension and verifies the URL's
    host; the context is this client's own, so pinning the name here is safe.
    """

    class PinnedName(ssl.SSLObject):
        @classmethod
        def _create(  # type: ignore[override]
            cls,
            incoming: ssl.MemoryBIO,
            outgoing: ssl.MemoryBIO,
            server_side: bool = False,
            server_hostname: str | None = None,
            session: ssl.SSLSession | None = None,
            context: ssl.SSLContext | None = None,
        ) -> ssl.SSLObject:
            return super()._create(  # type: ignore[misc]
                incoming, outgoing, server_side, name, session, context
            )

    context.sslobject_class = PinnedName
