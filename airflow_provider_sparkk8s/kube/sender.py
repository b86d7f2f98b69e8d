"""What the sync and async senders share: settings read once, and one request's tries.

`SenderBase` reads the settings once: the retry policy, the token source and the TLS
context; a sender adds its transport and nothing else. `Attempts` keeps one request's
tries, so `sync_client` and `async_client` differ only in how they send, sleep and stream
(lightkube's split).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from airflow_provider_sparkk8s.kube.auth import (
    ExecCredentialSource,
    TokenSource,
    load_exec_certificate,
    ssl_context,
    token_source,
    warn_if_insecure,
)
from airflow_provider_sparkk8s.kube.error_mapping import api_error, connection_error
from airflow_provider_sparkk8s.kube.oidc import OidcTokenSource
from airflow_provider_sparkk8s.kube.proxy import Proxy, proxy_for
from airflow_provider_sparkk8s.kube.request import KubeRequest
from airflow_provider_sparkk8s.kube.retries import (
    RetryPolicy,
    retry_delay,
    should_retry_status,
    should_retry_transport,
)
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure
from airflow_provider_sparkk8s.records import record

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    import ssl  # annotations only: auth.ssl_context loads it for an https server
    from typing import Any

log = logging.getLogger(__name__)

# A watch with no server-side timeout still must not hang forever on a dead connection.
_WATCH_IDLE_LIMIT = 3600.0


@record
class Refusal:
    """An error answer as the tries read it, whichever transport brought it."""

    status: int
    body: bytes
    reason: str
    retry_after: str | None  # the Retry-After header


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

    def after_status(self, refusal: Refusal) -> float:
        status = refusal.status
        if status == 401 and not self.reauthenticated and self.sender.tokens.reload():
            self.reauthenticated = True  # the token rotated under us: one more try
            self.attempt -= 1
            log.info("401 from %s %s; retrying with the re-read token", *self._what())
            return 0.0
        policy = self.sender.retry
        if self.attempt >= policy.attempts or not should_retry_status(self.request, status):
            raise api_error(
                self.request, status, refusal.body, refusal.reason, self.sender.settings
            )
        delay = retry_delay(policy, self.attempt, refusal.retry_after)
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
