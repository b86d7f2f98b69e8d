"""KubeClient: the sync sender (operator, CLI, hook), on the standard-library pool.

Request building (`request`), auth and tries (`sender`), retry rules (`retries`), errors
(`error_mapping`) and decoding (`decoding`) are shared; only sending, sleeping and
streaming are written here, through `http_pool` (no httpx on sparkk8s-submit's import
path). Keep-alive connections are reused between requests, which is most of a
submission's latency.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping

from airflow_provider_sparkk8s.kube.decoding import decode_json, decode_watch_line
from airflow_provider_sparkk8s.kube.http_pool import HttpPool, PoolResponse
from airflow_provider_sparkk8s.kube.request import (
    KubeRequest,
    build_request,
    watch_params,
)
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.sender import Attempts, Refusal, SenderBase
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any, Self, Unpack

    from airflow_provider_sparkk8s.kube.request import RequestFields

log = logging.getLogger(__name__)


class KubeClient(SenderBase):
    """Synchronous client (operator, CLI). Thread-safe; reuse one per connection."""

    def __init__(self, settings: ClientSettings, retry: RetryPolicy | None = None):
        super().__init__(settings, retry)
        self._pool = HttpPool(
            settings.server,
            tls=self.tls,
            server_name=settings.tls_server_name,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.request_timeout,
            proxy=self.proxy,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def request(self, method: str, path: str, **fields: Unpack[RequestFields]) -> dict[str, Any]:
        """The answer's JSON; `each_item` keeps only its view of each of a list's items,
        decoded one at a time (`decode_json`)."""
        request, each_item = build_request(method, path, **fields), fields.get("each_item")
        return decode_json(request, self._send(request).content, each_item)

    def text(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """GET a plain-text resource (pods/log)."""
        return self._send(build_request("GET", path, params=params)).text

    def version(self) -> dict[str, Any]:
        return self.request("GET", "/version")

    def stream_lines(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> Iterator[str]:
        """GET a streaming resource line by line (watches, followed logs).

        Ends when the server closes the stream or the connection breaks: the caller
        reconnects (from the last resourceVersion for a watch). `read_timeout` bounds the
        wait for the next line; by default, the server's timeoutSeconds plus slack.
        """
        request = build_request("GET", path, params=params)
        response = self._send(
            request,
            stream=True,
            read_timeout=read_timeout or self.watch_read_timeout(request.params),
        )
        try:
            yield from response.iter_lines()
        except TransportFailure as failure:
            log.debug("stream %s ended: %s", path, failure.kind)
        finally:
            response.close()

    def watch(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Watch events `{"type": ..., "object": {...}}`; ERROR events are yielded as is."""
        for line in self.stream_lines(path, watch_params(params), read_timeout=read_timeout):
            event = decode_watch_line(line)
            if event is not None:
                yield event

    def _send(
        self, request: KubeRequest, *, stream: bool = False, read_timeout: float | None = None
    ) -> PoolResponse:
        attempts = Attempts(self, request)
        while True:
            attempts.attempt += 1
            try:
                response = self._pool.send(
                    request.method,
                    request.path,
                    request.params,
                    self.headers_for(request),
                    request.content,
                    stream=stream,
                    read_timeout=read_timeout,
                )
            except TransportFailure as failure:
                delay = attempts.after_error(failure)
            else:
                if response.status < 400:
                    return response
                if stream:
                    response.read()
                delay = attempts.after_status(_refusal(response))
            if delay:
                time.sleep(delay)


def _refusal(response: PoolResponse) -> Refusal:
    return Refusal(
        response.status, response.content, response.reason, response.headers.get("Retry-After")
    )
