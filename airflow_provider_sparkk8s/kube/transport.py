"""What the sync and async senders share below HTTP: the failure type and the request line.

Both senders report a failure that is not an HTTP status as `TransportFailure`, named the
same way (ConnectError, ConnectTimeout, ReadTimeout, ReadError, RemoteProtocolError) so
retry decisions and messages do not depend on which HTTP library sent the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode, urlsplit

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    import ssl
    from typing import Any

# RFC 3986 path characters that stay as they are; everything else is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=~%"


class TransportFailure(Exception):
    """A request that got no HTTP answer. `sent` is False when it certainly never reached
    the server (no connection), so even a POST may be tried again."""

    def __init__(self, kind: str, cause: BaseException, *, sent: bool) -> None:
        super().__init__(f"{kind}: {cause}")
        self.kind = kind
        self.cause = cause
        self.sent = sent


def tls_failure(failure: TransportFailure) -> ssl.SSLError | None:
    """The TLS fault (wrong CA, rejected certificate, failed handshake) behind a failure."""
    # Imported here, not at the top: only a failed request pays for ssl, never a plain-http
    # client's start.
    import ssl

    # TLS flow control and a peer that closed: the TLS layer raises these inside every read
    # and handshake that waits, so they sit in the context of any read timeout or dropped
    # connection. They say nothing wrong with certificates, and such a failure is retried.
    not_tls_faults = (
        ssl.SSLWantReadError,
        ssl.SSLWantWriteError,
        ssl.SSLEOFError,
        ssl.SSLZeroReturnError,
    )
    seen: BaseException | None = failure.cause
    while seen is not None:
        if isinstance(seen, ssl.SSLError) and not isinstance(seen, not_tls_faults):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def query_value(value: Any) -> str:
    """As the API server reads query values: booleans lower-case, None empty."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


def encode_query(params: Mapping[str, Any]) -> str:
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((key, query_value(item)) for item in values)
    return urlencode(pairs)


def base_path(server: str) -> str:
    """The path prefix of the server URL (a proxy's `/k8s/clusters/x`), without a trailing /."""
    return urlsplit(server).path.rstrip("/")


def request_target(prefix: str, path: str, params: Mapping[str, Any]) -> str:
    """The request line's target: prefix, percent-encoded path and the query."""
    target = quote(prefix + path, safe=_PATH_SAFE)
    query = encode_query(params) if params else ""
    return f"{target}?{query}" if query else target
