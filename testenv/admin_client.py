"""testenv's own HTTPS client of the API server, on the standard library, so the test plane
never depends on the product it tests.

Two faces: `raw`/`json` for the launcher (health checks, nodes, token requests: one try,
the caller polls), and `request`/`watch` for testenv's long-lived processes (the node
agent, the RBAC set-up), which retry as a client-go client does: 429 always, 5xx and broken
connections only when sending twice cannot do more than once. `from_kubeconfig` builds
either from a kubeconfig that testenv wrote (certificate and key files, or a token).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json as jsonlib
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlencode, urlsplit

import yaml

log = logging.getLogger(__name__)
ATTEMPTS = 5  # total tries of one request, the first included
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 30.0
WATCH_IDLE_LIMIT = 3600.0  # a watch without timeoutSeconds must not hang on a dead socket
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_APPLY_PATCH = "application/apply-patch+yaml"


class AdminHttpError(Exception):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:500]}")
        self.status = status


class _NotSent(Exception):
    """The connection failed before the request left: safe to try again, even a POST."""


def _idempotent(method: str, content_type: str | None) -> bool:
    return method in _IDEMPOTENT or (method == "PATCH" and content_type == _APPLY_PATCH)


def _retry_delay(attempt: int, retry_after: str | None) -> float:
    if retry_after and retry_after.isdigit():
        return min(float(retry_after), MAX_RETRY_AFTER) + random.random() * 0.1
    ceiling = min(5.0, 0.1 * 2 ** (attempt - 1))
    return ceiling / 2 + random.random() * ceiling / 2  # jittered, so retries spread out


def _connect(connection: http.client.HTTPSConnection) -> None:
    try:
        connection.connect()
    except ssl.SSLCertVerificationError:
        raise
    except OSError as error:
        raise _NotSent(str(error)) from error


class AdminHttp:
    """Thread-safe: every request opens its own connection (loopback TLS is cheap), so
    pod workers, informers and the heartbeat never share one."""

    def __init__(
        self,
        port: int,
        ca_file: Path | None,
        cert_file: Path | None = None,
        key_file: Path | None = None,
        timeout: float = 10.0,
        *,
        host: str = "127.0.0.1",
        token: str | None = None,
        ca_data: str | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._timeout = timeout
        self._token = token
        self._context = ssl.create_default_context(
            cafile=str(ca_file) if ca_file else None, cadata=ca_data
        )
        if cert_file and key_file:
            self._context.load_cert_chain(str(cert_file), str(key_file))
        self._streams: set[http.client.HTTPSConnection] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_kubeconfig(cls, path: Path | str, timeout: float = 10.0) -> Self:
        """The current context's server and user; relative file names are read from the
        kubeconfig's folder."""
        path = Path(path)
        config = yaml.safe_load(path.read_text())

        def entry(kind: str, name: str) -> dict[str, Any]:
            found = next(e for e in config[f"{kind}s"] if e["name"] == name)
            return dict(found[kind])

        def file(value: str | None) -> Path | None:
            return None if value is None else path.parent / value

        context = entry("context", config["current-context"])
        cluster, user = entry("cluster", context["cluster"]), entry("user", context["user"])
        if "client-certificate-data" in user or "client-key-data" in user:
            raise ValueError(f"{path}: inline client certificates are not supported here")
        server = urlsplit(cluster["server"])
        ca_data = cluster.get("certificate-authority-data")
        return cls(
            server.port or 443,
            file(cluster.get("certificate-authority")),
            file(user.get("client-certificate")),
            file(user.get("client-key")),
            timeout,
            host=server.hostname or "127.0.0.1",
            token=user.get("token"),
            ca_data=base64.b64decode(ca_data).decode() if ca_data else None,
        )

    # -- the launcher's face: one try --

    def raw(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        payload = None if body is None else jsonlib.dumps(body).encode()
        connection = self._connection(self._timeout)
        try:
            response = self._exchange(connection, method, path, payload, "application/json")
            return response.status, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.raw(method, path, body)
        if status >= 300:
            raise AdminHttpError(method, path, status, data.decode(errors="replace"))
        return jsonlib.loads(data) if data else None

    # -- a kubelet's face: retries, queries, any content type, watches --

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | str | None = None,
        content_type: str | None = None,
    ) -> Any:
        """The answer's JSON (None for an empty body); AdminHttpError once retrying is over."""
        if json is not None:
            content = jsonlib.dumps(json)
            content_type = content_type or "application/json"
        body = content.encode() if isinstance(content, str) else content
        connection, response = self._send(method, path, params, body, content_type, self._timeout)
        try:
            data = response.read()
        finally:
            connection.close()
        return jsonlib.loads(data) if data else None

    def watch(self, path: str, params: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """Watch events `{"type": ..., "object": {...}}`, ERROR events as they come. Ends
        when the server closes the stream or the connection breaks (or `close`): the caller
        lists again or watches on from its last resourceVersion."""
        query = {"allowWatchBookmarks": "true", **(params or {}), "watch": "1"}
        server_timeout = query.get("timeoutSeconds")
        read_timeout = float(server_timeout) + self._timeout if server_timeout else WATCH_IDLE_LIMIT
        connection, response = self._send("GET", path, query, None, None, read_timeout)
        with self._lock:
            self._streams.add(connection)
        try:
            while line := response.readline():
                if line.strip():
                    yield jsonlib.loads(line)
        except (OSError, http.client.HTTPException, ValueError) as error:
            log.debug("watch %s ended: %s", path, error)
        finally:
            with self._lock:
                self._streams.discard(connection)
            connection.close()

    def close(self) -> None:
        """Ends every open watch (their iterators stop); later requests still work."""
        with self._lock:
            streams, self._streams = list(self._streams), set()
        for connection in streams:
            if connection.sock is not None:
                # shutdown, not close: a thread blocked reading the socket wakes up.
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)

    # -- sending --

    def _connection(self, timeout: float) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            self._host, self._port, context=self._context, timeout=timeout
        )

    def _exchange(
        self,
        connection: http.client.HTTPSConnection,
        method: str,
        target: str,
        body: bytes | None,
        content_type: str | None,
    ) -> http.client.HTTPResponse:
        headers = {"Accept": "application/json"}
        if body is not None and content_type:
            headers["Content-Type"] = content_type
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        connection.request(method, target, body=body, headers=headers)
        return connection.getresponse()

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str | None,
        timeout: float,
    ) -> tuple[http.client.HTTPSConnection, http.client.HTTPResponse]:
        """A connection whose response has a status below 400, its body not read yet."""
        target = f"{path}?{urlencode(params)}" if params else path
        idempotent = _idempotent(method, content_type)
        attempt = 0
        while True:
            attempt += 1
            connection = self._connection(timeout)
            retry_after = None
            try:
                _connect(connection)
                response = self._exchange(connection, method, target, body, content_type)
            except _NotSent as error:
                connection.close()
                if attempt >= ATTEMPTS:
                    raise ConnectionError(f"{method} {path}: {error}") from error
                why = str(error)
            except ssl.SSLCertVerificationError:
                connection.close()
                raise  # a wrong CA does not fix itself
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if attempt >= ATTEMPTS or not idempotent:
                    raise
                why = repr(error)
            else:
                if response.status < 400:
                    return connection, response
                data = response.read()
                connection.close()
                retriable = response.status == 429 or (
                    idempotent and response.status in RETRY_STATUSES
                )
                if attempt >= ATTEMPTS or not retriable:
                    raise AdminHttpError(
                        method, path, response.status, data.decode(errors="replace")
                    )
                why, retry_after = str(response.status), response.getheader("Retry-After")
            delay = _retry_delay(attempt, retry_after)
            log.info("%s %s: %s; retry %d/%d in %.2fs", method, path, why, attempt,
                     ATTEMPTS - 1, delay)  # fmt: skip
            time.sleep(delay)
