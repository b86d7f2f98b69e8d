"""A thread-safe pool of keep-alive HTTP/1.1 connections on plain sockets.

`KubeClient` sends through this rather than httpx: importing httpx and httpcore took
about 170 ms of sparkk8s-submit's start-up. Nor through the standard library's http.client:
its header parsing is the email package's, and importing them cost about 11 ms of the
CLI's ~80. The wire format is `http11`'s; sockets, TLS, proxies, keep-alive and the
mapping of failures are here. The async client keeps httpx. Failures below HTTP become
`TransportFailure`, named as httpx names them, so retries and messages are the same for
both clients.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from airflow_provider_sparkk8s.kube import http11
from airflow_provider_sparkk8s.kube.proxy import Proxy
from airflow_provider_sparkk8s.kube.transport import TransportFailure, base_path, request_target

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    import ssl

MAX_IDLE = 16  # kept-alive connections; more concurrent requests open more, then close them
# How a server's close of an idle keep-alive connection shows when we next use it.
_CLOSED_BY_SERVER: tuple[type[Exception], ...] = (
    http11.ClosedWithoutAnswer,
    BrokenPipeError,
    ConnectionResetError,
)


def _closed_by_server(tls: ssl.SSLContext | None) -> tuple[type[Exception], ...]:
    """_CLOSED_BY_SERVER, and on a TLS connection also TLS's forms of it. ssl is imported
    here, not at the top: a plain-http client never loads it (about 5 ms of the CLI's start),
    and a connection with a TLS context has loaded it already."""
    if tls is None:
        return _CLOSED_BY_SERVER
    import ssl

    return (*_CLOSED_BY_SERVER, ssl.SSLEOFError, ssl.SSLZeroReturnError)


def _resolvable(host: str) -> str | bytes:
    """An ASCII host name as bytes, as getaddrinfo takes it: a str goes through the idna
    codec first, whose import (stringprep, unicodedata) was about 2 ms of the CLI's start."""
    return host.encode("ascii") if host.isascii() else host


class _Connection:
    """One socket to the API server: its own TLS server name, connect and read timeouts."""

    def __init__(
        self,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        server_name: str | None,
        connect_timeout: float,
        proxy: Proxy | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = connect_timeout
        self._tls = tls
        self._server_name = server_name or host
        self._proxy = proxy
        self.sock: socket.socket | None = None
        self.reader: http11.Reader | None = None  # buffered: keeps what the next read needs
        self.reused = False

    def connect(self) -> None:
        proxy = self._proxy
        host, port = (proxy.host, proxy.port) if proxy else (self.host, self.port)
        # getaddrinfo takes the host as bytes too; typeshed names str alone.
        sock = socket.create_connection((_resolvable(host), port), self.timeout)  # type: ignore[arg-type]
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if proxy is not None and self._tls is not None:
            try:  # https through a proxy: a CONNECT tunnel, then TLS end to end
                _open_tunnel(sock, proxy, self.host, self.port)
            except BaseException:
                sock.close()
                raise
        if self._tls is not None:
            try:  # SNI and hostname verification both use the TLS server name
                sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
            except BaseException:
                sock.close()
                raise
        self.sock = sock
        self.reader = sock.makefile("rb")

    def close(self) -> None:
        # The reader first: a socket with an open file object is not really closed.
        reader, sock, self.reader, self.sock = self.reader, self.sock, None, None
        if reader is not None:
            reader.close()
        if sock is not None:
            sock.close()

    def idle_and_open(self) -> bool:
        """A kept-alive socket with nothing to read: the server has not closed it."""
        if self.sock is None:
            return False
        try:
            return not select.select([self.sock], [], [], 0)[0]
        except (OSError, ValueError):
            return False


class ProxyRefused(OSError):
    """The proxy answered CONNECT with something other than 2xx."""


def _open_tunnel(sock: socket.socket, proxy: Proxy, host: str, port: int) -> None:
    """CONNECT host:port through `proxy` on `sock`; returns once the tunnel is open."""
    target = http11.host_field(host, port, default_port=0)  # CONNECT always names the port
    extra = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else {}
    sock.sendall(http11.request_head("CONNECT", target, target, extra, None))
    head = b""
    while not head.endswith(b"\r\n\r\n"):  # byte by byte: never read into the TLS stream
        chunk = sock.recv(1)
        if not chunk:
            raise ProxyRefused(f"the proxy {proxy} closed the connection during CONNECT {target}")
        head += chunk
        if len(head) > http11.MAX_HEADER_BYTES:
            raise ProxyRefused(f"the proxy {proxy} sent an oversized answer to CONNECT")
    status_line = head.split(b"\r\n", 1)[0]
    try:
        status = http11.parse_status_line(status_line)[1]
    except http11.ProtocolError:
        status = 0
    if not 200 <= status < 300:
        raise ProxyRefused(
            f"the proxy {proxy} refused CONNECT {target}: {status_line.decode('latin-1')}"
        )


class PoolResponse:
    """Status, headers and body of one answer; a streamed body is read with `iter_lines`."""

    def __init__(
        self,
        head: http11.ResponseHead,
        body: http11.Framing,
        connection: _Connection,
        pool: HttpPool | None,
    ) -> None:
        self.status = head.status
        self.reason = head.reason
        self.headers = head.headers
        assert connection.reader is not None
        self._pieces = http11.body_pieces(connection.reader, body)
        self._keeps_alive = http11.keeps_alive(head, body)
        self._connection = connection
        self._pool = pool  # set while the connection may go back to the pool
        self.content = b""

    def read(self) -> None:
        try:
            self.content = b"".join(self._pieces)
        except (OSError, http11.ProtocolError) as error:
            self._connection.close()
            raise _failure(error, sent=True) from None
        self._release()
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            import zlib

            try:  # the API server compresses large lists when asked (wbits 47: gzip header)
                self.content = zlib.decompress(self.content, 47)
            except zlib.error as error:
                raise TransportFailure("DecodingError", error, sent=True) from None

    @property
    def text(self) -> str:
        return self.content.decode(self.headers.get_content_charset() or "utf-8", "replace")

    def iter_lines(self) -> Iterator[str]:
        """Lines of a streamed body (watch events, followed logs) as they arrive."""
        try:
            for line in http11.lines(self._pieces):
                yield line.decode("utf-8", "replace")
        except (OSError, http11.ProtocolError) as error:
            raise _failure(error, sent=True) from None

    def close(self) -> None:
        """After a stream: the connection may be mid-body, so it is not reused."""
        self._pool = None
        self._connection.close()

    def _release(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._keeps_alive:
            pool.checkin(self._connection)
        else:
            self._connection.close()


class HttpPool:
    def __init__(
        self,
        server: str,
        *,
        tls: ssl.SSLContext | None,
        server_name: str | None,
        connect_timeout: float,
        read_timeout: float,
        proxy: Proxy | None = None,
    ) -> None:
        parts = urlsplit(server)
        if parts.hostname is None:
            raise ValueError(f"server URL has no host: {server!r}")
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = base_path(server)
        self._host_field = http11.host_field(
            self._host, self._port, 443 if parts.scheme == "https" else 80
        )
        self._tls = tls if parts.scheme == "https" else None
        self._closed_by_server = _closed_by_server(self._tls)
        self._server_name = server_name
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._proxy = proxy
        # Plain http through a proxy: absolute-form targets, as Go's transport sends them.
        plain_through_proxy = proxy is not None and self._tls is None
        self._origin = f"http://{parts.netloc.rsplit('@', 1)[-1]}" if plain_through_proxy else ""
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, object],
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        stream: bool = False,
        read_timeout: float | None = None,
    ) -> PoolResponse:
        """Send one request; the whole body is read unless `stream`.

        A kept-alive connection the server closed just before we used it is replaced and
        the request sent once more whatever its method, as Go's client does: an answer
        that never started means the server did not take the request.
        """
        target = self._origin + request_target(self._prefix, path, params)
        if self._origin and self._proxy and self._proxy.authorization:
            headers = {**headers, "Proxy-Authorization": self._proxy.authorization}
        # As client-go: large lists come compressed; streams stay plain.
        headers = {**headers, "Accept-Encoding": "identity" if stream else "gzip"}
        request = http11.request_head(method, target, self._host_field, headers, body)
        if body:
            request += body
        for fresh in (False, True):  # the second try never takes a kept-alive connection
            connection = self._new_connection() if fresh else self._checkout()
            try:
                response = self._exchange(connection, method, request, read_timeout)
            except _ClosedBeforeAnswer as closed:
                connection.close()
                if connection.reused:
                    continue
                raise _failure(closed.error, sent=True) from None
            except TransportFailure:
                connection.close()
                raise
            if not stream:
                response.read()
            return response
        raise AssertionError("unreachable: a fresh connection is never retried")

    def checkin(self, connection: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                connection.reused = True
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _checkout(self) -> _Connection:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if connection.idle_and_open():
                    return connection
                connection.close()
        return self._new_connection()

    def _new_connection(self) -> _Connection:
        return _Connection(
            self._host,
            self._port,
            self._tls,
            self._server_name,
            self._connect_timeout,
            self._proxy,
        )

    def _exchange(
        self,
        connection: _Connection,
        method: str,
        request: bytes,
        read_timeout: float | None,
    ) -> PoolResponse:
        if connection.sock is None:
            try:
                connection.connect()
            except TimeoutError as error:
                raise TransportFailure("ConnectTimeout", error, sent=False) from None
            except OSError as error:  # refused, unreachable, TLS handshake
                raise TransportFailure("ConnectError", error, sent=False) from None
        assert connection.sock is not None and connection.reader is not None
        connection.sock.settimeout(read_timeout or self._read_timeout)
        try:
            connection.sock.sendall(request)
            head = http11.read_response_head(connection.reader)
            body = http11.framing(method, head)
        except self._closed_by_server as error:
            raise _ClosedBeforeAnswer(error) from None
        except (OSError, http11.ProtocolError) as error:
            raise _failure(error, sent=True) from None
        return PoolResponse(head, body, connection, self)


class _ClosedBeforeAnswer(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _failure(error: BaseException, *, sent: bool) -> TransportFailure:
    if isinstance(error, TimeoutError):
        return TransportFailure("ReadTimeout", error, sent=sent)
    if isinstance(error, http11.ProtocolError):
        return TransportFailure("RemoteProtocolError", error, sent=sent)
    return TransportFailure("ReadError", error, sent=sent)
