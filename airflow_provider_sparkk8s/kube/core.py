"""What the sync and async senders share: building a request, the retry rules, the errors.

Building a request and judging an answer are plain functions here, so `sync_client` and
`async_client` differ only in how they send, sleep and stream (lightkube's split).
`SenderBase` reads the settings once: the retry policy, the token source and the TLS
context; a sender adds its transport and nothing else.

Retries: 429 (honouring Retry-After), 5xx and transport failures, with capped, jittered
exponential backoff and a bounded number of attempts. A request that is not idempotent
(POST, JSON/merge PATCH) is retried only when the server certainly did not act on it: the
connection was never made, or the server answered 429.
"""

from __future__ import annotations

import contextlib
import json as jsonlib
import logging
import os
import random
import re
import ssl
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_sparkk8s import __version__
from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError
from airflow_provider_sparkk8s.kube.auth import (
    ExecCredentialSource,
    TokenSource,
    load_exec_certificate,
    ssl_context,
    token_source,
    warn_if_insecure,
)
from airflow_provider_sparkk8s.kube.oidc import OidcTokenSource
from airflow_provider_sparkk8s.kube.paths import access_of
from airflow_provider_sparkk8s.kube.proxy import Proxy, proxy_for
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure

log = logging.getLogger(__name__)

USER_AGENT = f"airflow-provider-sparkk8s/{__version__}"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
# A list of metadata only (name, uid, resourceVersion, labels...), half a pod's bytes; a
# server that cannot convert answers the plain list, whose items carry the same metadata.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
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
    accept: str | None = None

    @property
    def idempotent(self) -> bool:
        """Safe to send twice: the second try cannot do anything the first did not."""
        if self.method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS"):
            return True
        return self.method == "PATCH" and self.content_type == APPLY_PATCH

    def headers(self) -> dict[str, str]:
        # As kubectl: JSON, but plain-text resources (pods/log) must not be refused with 406.
        headers = {"Accept": self.accept or "application/json, */*", "User-Agent": USER_AGENT}
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
    accept: str | None = None,
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
    return KubeRequest(method, path, dict(params or {}), body, content_type, accept)


def watch_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """A watch request's query: `watch=1` and bookmarks unless the caller said otherwise."""
    merged = dict(params or {})
    merged["watch"] = "1"
    merged.setdefault("allowWatchBookmarks", "true")
    return merged


# What a list keeps of each item: a slimmer mapping, or a record (a metadata list's versions).
ItemView = Callable[[Mapping[str, Any]], Any]
_DECODER = jsonlib.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")


ITEMS_PER_STEP = 200  # a 10,000-pod list lets an event loop serve others 50 times


def decode_json(
    request: KubeRequest, body: bytes, each_item: ItemView | None = None
) -> dict[str, Any]:
    """The answer's JSON. With `each_item`, a list's `items` are decoded one at a time and
    only `each_item(item)` is kept: a list of 10,000 pods never exists whole as objects,
    whose memory the allocator would keep (it cannot hand back a page that one small
    survivor still uses)."""
    if each_item is not None:
        steps = decode_list_steps(request, body, each_item)
        while (decoded := next_step(steps)) is None:
            pass
        return decoded
    if not body:
        return {}
    try:
        parsed = jsonlib.loads(body)
    except ValueError:
        raise _invalid(request) from None
    return parsed if isinstance(parsed, dict) else {"items": parsed}


def decode_list_steps(
    request: KubeRequest, body: bytes, each_item: ItemView
) -> Generator[None, None, dict[str, Any]]:
    """`decode_json` with `each_item`, in steps: it pauses after every `ITEMS_PER_STEP`
    items, so the async sender lets its event loop deliver other events between them (a
    large list decoded in one go held every trigger's event back for a second or more)."""
    if not body:
        return {}
    try:
        return (yield from _decode_list(body.decode(), each_item))
    except (ValueError, IndexError, TypeError):
        raise _invalid(request) from None


def next_step(steps: Generator[None, None, dict[str, Any]]) -> dict[str, Any] | None:
    """Runs one step of `decode_list_steps`: the decoded answer once the last step is done,
    else None (the caller may let others run before the next step)."""
    try:
        next(steps)
    except StopIteration as done:
        decoded: dict[str, Any] = done.value
        return decoded
    return None


def _invalid(request: KubeRequest) -> KubeApiError:
    return KubeApiError(
        0,
        "InvalidResponse",
        "the API server answered with something that is not JSON",
        method=request.method,
        path=request.path,
    )


def _decode_list(text: str, each_item: ItemView) -> Generator[None, None, dict[str, Any]]:
    """A JSON object whose `items` array goes through `each_item` as it is read."""
    index = _skip(text, _expect(text, _skip(text, 0), "{"))
    decoded: dict[str, Any] = {}
    while text[index] != "}":
        key, index = _DECODER.raw_decode(text, index)
        if not isinstance(key, str):
            raise TypeError("an object key that is not a string")
        index = _skip(text, _expect(text, _skip(text, index), ":"))
        if key == "items" and text[index] == "[":
            decoded[key], index = yield from _decode_items(text, index, each_item)
        else:
            decoded[key], index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if text[index] != "}":
            index = _skip(text, _expect(text, index, ","))
            _expect(text, index, '"')
    if text[_skip(text, index + 1) :]:
        raise ValueError("data after the JSON object")
    return decoded


def _decode_items(
    text: str, index: int, each_item: ItemView
) -> Generator[None, None, tuple[list[Any], int]]:
    items: list[Any] = []
    index = _skip(text, index + 1)
    while text[index] != "]":
        item, index = _DECODER.raw_decode(text, index)
        items.append(each_item(item) if isinstance(item, Mapping) else item)
        del item  # the whole object goes now, before the next one is read
        if len(items) % ITEMS_PER_STEP == 0:
            yield
        index = _skip(text, index)
        if text[index] != "]":
            index = _skip(text, _expect(text, index, ","))
            if text[index] == "]":
                raise ValueError(f"a trailing ',' at {index}")
    return items, index + 1


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _expect(text: str, index: int, char: str) -> int:
    if text[index] != char:
        raise ValueError(f"expected {char!r} at {index}")
    return index + 1


def decode_watch_line(line: str) -> dict[str, Any] | None:
    """One watch event from one line of the stream; None for a keep-alive blank line."""
    return jsonlib.loads(line) if line.strip() else None


# --------------------------------------------------------------------------- retry rules


def backoff_delay(
    attempt: int, base: float, cap: float, rng: Callable[[], float] = random.random
) -> float:
    """Seconds to wait after failure number `attempt` (from 1): exponential from `base`,
    capped at `cap`, half of it jittered, so many clients retrying at once spread out
    but still back off. Used by request retries and by watch reconnects alike."""
    ceiling = min(cap, base * float(2 ** max(attempt - 1, 0)))
    return ceiling / 2 + rng() * ceiling / 2


def retry_delay(
    policy: RetryPolicy,
    attempt: int,
    retry_after: str | None = None,
    rng: Callable[[], float] = random.random,
) -> float:
    """Seconds before try `attempt + 1`: Retry-After if the server gave one (capped, with a
    little jitter), else `backoff_delay`."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), policy.max_retry_after) + rng() * 0.05
        except ValueError:
            pass  # an HTTP date; rare for the API server, fall back to our own backoff
    return backoff_delay(attempt, policy.base_delay, policy.max_delay, rng)


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


# --------------------------------------------------------------------------- errors


def api_error(
    request: KubeRequest,
    status: int,
    body: bytes,
    http_reason: str,
    settings: ClientSettings,
) -> KubeApiError:
    """KubeApiError from a failed response, with the Status body's reason and message."""
    parsed: Any = None
    with contextlib.suppress(ValueError):
        parsed = jsonlib.loads(body) if body else None
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
            f"({settings.auth_description}){settings.origin()}"
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
                f"TLS verification of {target} failed: {detail}; {hint}{settings.origin()}"
            )
        return KubeConnectionError(
            f"TLS handshake with {target} failed: {tls.reason or type(tls).__name__}"
            f"{settings.origin()}"
        )
    return KubeConnectionError(
        f"cannot reach the API server {target}: {failure.kind}: {failure.cause}{settings.origin()}"
    )


# TLS flow control and a peer that closed: the TLS layer raises these inside every read and
# handshake that waits, so they sit in the context of any read timeout or dropped
# connection. They say nothing wrong with certificates, and such a failure is retried.
_NOT_TLS_FAULTS = (
    ssl.SSLWantReadError,
    ssl.SSLWantWriteError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)


def _tls_failure(failure: TransportFailure) -> ssl.SSLError | None:
    seen: BaseException | None = failure.cause
    while seen is not None:
        if isinstance(seen, ssl.SSLError) and not isinstance(seen, _NOT_TLS_FAULTS):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


# --------------------------------------------------------------------------- the senders' base


class Attempts:
    """Bookkeeping of one request's tries: whether and when to try again, or the error.

    A sender's loop counts `attempt`, sends, and asks `after_error` or `after_status` how
    long to sleep; both raise the final error once retrying is over.
    """

    def __init__(self, sender: SenderBase, request: KubeRequest):
        self.sender = sender
        self.request = request
        self.attempt = 0
        self.reauthenticated = False

    def after_error(self, failure: TransportFailure) -> float:
        policy = self.sender.retry
        if self.attempt >= policy.attempts or not should_retry_transport(self.request, failure):
            raise connection_error(self.request, failure, self.sender.settings) from None
        delay = retry_delay(policy, self.attempt)
        self._log(failure.kind, delay)
        return delay

    def after_status(self, status: int, body: bytes, reason: str, retry_after: str | None) -> float:
        if status == 401 and not self.reauthenticated and self.sender.tokens.reload():
            self.reauthenticated = True  # the token rotated under us: one more try
            self.attempt -= 1
            log.info("401 from %s %s; retrying with the re-read token", *self._what())
            return 0.0
        policy = self.sender.retry
        if self.attempt >= policy.attempts or not should_retry_status(self.request, status):
            raise api_error(self.request, status, body, reason, self.sender.settings)
        delay = retry_delay(policy, self.attempt, retry_after)
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
            self.sender.retry.attempts - 1,
            delay,
        )


class SenderBase:
    """Settings read once: retry policy, bearer-token source, TLS context (or none)."""

    def __init__(self, settings: ClientSettings, retry: RetryPolicy | None = None):
        self.settings = settings
        self.retry = retry or RetryPolicy()
        warn_if_insecure(settings)
        self.tls: ssl.SSLContext | None = (
            ssl_context(settings) if settings.server.startswith("https://") else None
        )
        self.tokens: TokenSource | ExecCredentialSource | OidcTokenSource = token_source(
            settings, lambda credential: load_exec_certificate(self.tls, credential)
        )
        self.proxy: Proxy | None = proxy_for(
            settings.server, settings.proxy_url, os.environ, settings.source
        )
        if self.proxy is not None:
            log.info("Reaching %s through the proxy %s", settings.server, self.proxy)

    def headers_for(self, request: KubeRequest) -> dict[str, str]:
        """The request's headers plus the current Authorization (a token may rotate)."""
        headers = request.headers()
        authorization = self.tokens.authorization()
        if authorization:
            headers["Authorization"] = authorization
        return headers

    def watch_read_timeout(self, params: Mapping[str, Any]) -> float:
        """A watch waits for the server's own timeout, plus slack; without one, an hour."""
        server_timeout = params.get("timeoutSeconds")
        if server_timeout:
            return float(server_timeout) + self.settings.request_timeout
        return _WATCH_IDLE_LIMIT
