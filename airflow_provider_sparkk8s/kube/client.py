"""The provider's HTTP client for the Kubernetes API: the shared rules and the sync client.

Building a request and judging a response are plain functions here. `KubeClient` sends
through a standard-library connection pool (`http_pool`), `AsyncKubeClient`
(`async_client`) through httpx.AsyncClient; they differ only in how they send, sleep and
stream. Both keep connections alive between requests, which is most of a submission's
latency.

Retries happen inside `request`: 429 (honouring Retry-After), 5xx and transport failures,
with capped, jittered exponential backoff and a bounded number of attempts. A request that
is not idempotent (POST, JSON/merge PATCH) is retried only when the server certainly did
not act on it: the connection was never made, or the server answered 429.
"""

from __future__ import annotations

import json as jsonlib
import logging
import random
import ssl
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from airflow_provider_sparkk8s import __version__
from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError
from airflow_provider_sparkk8s.kube.auth import ssl_context, token_source, warn_if_insecure
from airflow_provider_sparkk8s.kube.http_pool import HttpPool, PoolResponse
from airflow_provider_sparkk8s.kube.paths import access_of
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure

log = logging.getLogger(__name__)

USER_AGENT = f"airflow-provider-sparkk8s/{__version__}"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
_RETRIABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
# A watch with no server-side timeout still must not hang forever on a dead connection.
_WATCH_IDLE_LIMIT = 3600.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # total tries, including the first
    base_delay: float = 0.1  # seconds; doubles per attempt
    max_delay: float = 5.0
    max_retry_after: float = 30.0  # a server asking for longer than this is not waited for


@dataclass(frozen=True)
class KubeRequest:
    """One API request as plain data; auth headers are added at send time."""

    method: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    content: bytes | None = None
    content_type: str | None = None

    @property
    def idempotent(self) -> bool:
        """Safe to send twice: the second try cannot do anything the first did not."""
        if self.method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS"):
            return True
        return self.method == "PATCH" and self.content_type == APPLY_PATCH

    def headers(self) -> dict[str, str]:
        # As kubectl: JSON, but plain-text resources (pods/log) must not be refused with 406.
        headers = {"Accept": "application/json, */*", "User-Agent": USER_AGENT}
        if self.content_type:
            headers["Content-Type"] = self.content_type
        return headers


def build_request(
    method: str,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    content: bytes | str | None = None,
    content_type: str | None = None,
) -> KubeRequest:
    """Plain data for one request. A JSON PATCH body defaults to merge-patch."""
    method = method.upper()
    if json is not None and content is not None:
        raise TypeError("give json or content, not both")
    body: bytes | None
    if json is not None:
        body = jsonlib.dumps(json, separators=(",", ":")).encode()
        content_type = content_type or (MERGE_PATCH if method == "PATCH" else "application/json")
    elif content is not None:
        body = content.encode() if isinstance(content, str) else content
        if content_type is None:
            raise TypeError("content needs a content_type")
    else:
        body = None
    if not path.startswith("/"):
        raise ValueError(f"API path must be absolute: {path!r}")
    return KubeRequest(method, path, dict(params or {}), body, content_type)


def watch_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """A watch request's query: `watch=1` and bookmarks unless the caller said otherwise."""
    merged = dict(params or {})
    merged["watch"] = "1"
    merged.setdefault("allowWatchBookmarks", "true")
    return merged


def backoff_delay(
    policy: RetryPolicy, attempt: int, retry_after: str | None = None, rng: Any = random
) -> float:
    """Seconds before try `attempt + 1`: Retry-After if the server gave one, else jittered
    exponential backoff (half fixed, half random, so retries spread but still grow)."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), policy.max_retry_after) + rng.uniform(0, 0.05)
        except ValueError:
            pass  # an HTTP date; rare for the API server, fall back to our own backoff
    ceiling = min(policy.max_delay, policy.base_delay * (2 ** (attempt - 1)))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def should_retry_status(request: KubeRequest, status: int) -> bool:
    if status == 429:
        return True  # the server refused before acting: safe even for POST
    return status in _RETRIABLE_STATUSES and request.idempotent


def should_retry_transport(request: KubeRequest, failure: TransportFailure) -> bool:
    if _tls_failure(failure) is not None:
        return False  # a wrong CA or rejected certificate will not fix itself
    if not failure.sent:
        return True  # the request never left: safe even for POST
    return request.idempotent


def api_error(
    request: KubeRequest,
    status: int,
    body: bytes,
    http_reason: str,
    settings: ClientSettings,
) -> KubeApiError:
    """KubeApiError from a failed response, with the Status body's reason and message."""
    parsed: Any = None
    try:
        parsed = jsonlib.loads(body) if body else None
    except ValueError:
        pass
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        reason = parsed.get("reason") or http_reason
        message = parsed.get("message") or http_reason
    else:
        reason = http_reason
        message = body.decode(errors="replace").strip()[:300] or http_reason
        parsed = None
    if status == 403:
        access = access_of(request.method, request.path, request.params)
        if access is not None:
            message = f"missing permission to {access.describe()}: {message}"
    elif status == 401:
        message = (
            f"{message}: the API server rejected the credentials "
            f"({settings.auth_description}{_from(settings)})"
        )
    return KubeApiError(
        status, reason, message, method=request.method, path=request.path, body=parsed
    )


def connection_error(
    request: KubeRequest, failure: TransportFailure, settings: ClientSettings
) -> KubeConnectionError:
    tls = _tls_failure(failure)
    target = f"{settings.server} ({request.method} {request.path})"
    if tls is not None:
        if isinstance(tls, ssl.SSLCertVerificationError):
            hint = (
                "check the CA certificate"
                + (f" {settings.ca_file}" if settings.ca_file else "")
                + " and the TLS server name"
            )
            detail = tls.verify_message or str(tls.reason)
            return KubeConnectionError(
                f"TLS verification of {target} failed: {detail}; {hint}{_from(settings)}"
            )
        return KubeConnectionError(
            f"TLS handshake with {target} failed: {tls.reason or type(tls).__name__}"
            f"{_from(settings)}"
        )
    return KubeConnectionError(
        f"cannot reach the API server {target}: {failure.kind}: {failure.cause}{_from(settings)}"
    )


def decode_json(request: KubeRequest, body: bytes) -> dict:
    if not body:
        return {}
    try:
        parsed = jsonlib.loads(body)
    except ValueError:
        raise KubeApiError(
            0,
            "InvalidResponse",
            "the API server answered with something that is not JSON",
            method=request.method,
            path=request.path,
        ) from None
    return parsed if isinstance(parsed, dict) else {"items": parsed}


def _tls_failure(failure: TransportFailure) -> ssl.SSLError | None:
    seen: BaseException | None = failure.cause
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _from(settings: ClientSettings) -> str:
    return f"; settings from {settings.source}" if settings.source else ""


class _Attempts:
    """Bookkeeping of one request's tries; decides whether and when to try again."""

    def __init__(self, client: _ClientBase, request: KubeRequest):
        self.client = client
        self.request = request
        self.attempt = 0
        self.reauthenticated = False

    def after_error(self, failure: TransportFailure) -> float:
        policy = self.client.retry
        if self.attempt >= policy.attempts or not should_retry_transport(self.request, failure):
            raise connection_error(self.request, failure, self.client.settings) from None
        delay = backoff_delay(policy, self.attempt)
        self._log(failure.kind, delay)
        return delay

    def after_status(self, status: int, body: bytes, reason: str, retry_after: str | None) -> float:
        if status == 401 and not self.reauthenticated and self.client.tokens.reload():
            self.reauthenticated = True  # the token file rotated under us: one more try
            self.attempt -= 1
            log.info("401 from %s %s; retrying with the re-read token", *self._what())
            return 0.0
        policy = self.client.retry
        if self.attempt >= policy.attempts or not should_retry_status(self.request, status):
            raise api_error(self.request, status, body, reason, self.client.settings)
        delay = backoff_delay(policy, self.attempt, retry_after)
        self._log(str(status), delay)
        return delay

    def _what(self) -> tuple[str, str]:
        return self.request.method, self.request.path

    def _log(self, why: str, delay: float) -> None:
        log.info(
            "%s %s: %s; retry %d/%d in %.2fs",
            *self._what(),
            why,
            self.attempt,
            self.client.retry.attempts - 1,
            delay,
        )


class _ClientBase:
    def __init__(self, settings: ClientSettings, retry: RetryPolicy | None = None):
        self.settings = settings
        self.retry = retry or RetryPolicy()
        self.tokens = token_source(settings)
        warn_if_insecure(settings)
        self._tls: ssl.SSLContext | None = (
            ssl_context(settings) if settings.server.startswith("https://") else None
        )

    def _headers(self, request: KubeRequest) -> dict[str, str]:
        headers = request.headers()
        authorization = self.tokens.authorization()
        if authorization:
            headers["Authorization"] = authorization
        return headers

    def _watch_read_timeout(self, params: Mapping[str, Any]) -> float:
        """A watch waits for the server's own timeout, plus slack; without one, an hour."""
        server_timeout = params.get("timeoutSeconds")
        if server_timeout:
            return float(server_timeout) + self.settings.request_timeout
        return _WATCH_IDLE_LIMIT


class KubeClient(_ClientBase):
    """Synchronous client (operator, CLI). Thread-safe; reuse one per connection."""

    def __init__(self, settings: ClientSettings, retry: RetryPolicy | None = None):
        super().__init__(settings, retry)
        self._pool = HttpPool(
            settings.server,
            tls=self._tls,
            server_name=settings.tls_server_name,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.request_timeout,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | str | None = None,
        content_type: str | None = None,
    ) -> dict:
        request = build_request(
            method, path, params=params, json=json, content=content, content_type=content_type
        )
        return decode_json(request, self._send(request).content)

    def text(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """GET a plain-text resource (pods/log)."""
        return self._send(build_request("GET", path, params=params)).text

    def version(self) -> dict:
        return self.request("GET", "/version")

    def stream_lines(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[str]:
        """GET a streaming resource line by line (watches, followed logs).

        Ends when the server closes the stream or the connection breaks: the caller
        reconnects (from the last resourceVersion for a watch).
        """
        request = build_request("GET", path, params=params)
        response = self._send(
            request, stream=True, read_timeout=self._watch_read_timeout(request.params)
        )
        try:
            yield from response.iter_lines()
        except TransportFailure as failure:
            log.debug("stream %s ended: %s", path, failure.kind)
        finally:
            response.close()

    def watch(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[dict]:
        """Watch events `{"type": ..., "object": {...}}`; ERROR events are yielded as is."""
        for line in self.stream_lines(path, watch_params(params)):
            if line.strip():
                yield jsonlib.loads(line)

    def _send(
        self, request: KubeRequest, *, stream: bool = False, read_timeout: float | None = None
    ) -> PoolResponse:
        attempts = _Attempts(self, request)
        while True:
            attempts.attempt += 1
            try:
                response = self._pool.send(
                    request.method,
                    request.path,
                    request.params,
                    self._headers(request),
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
                delay = attempts.after_status(
                    response.status,
                    response.content,
                    response.reason,
                    response.headers.get("Retry-After"),
                )
            if delay:
                time.sleep(delay)
