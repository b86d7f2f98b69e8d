"""The standard-library connection pool under KubeClient: keep-alive, a server's close of an
idle connection, timeouts, and the request line. A raw socket server plays the peer, so
each test decides exactly when the connection is answered or dropped."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from airflow_provider_sparkk8s.errors import KubeConnectionError
from airflow_provider_sparkk8s.kube.http_pool import HttpPool
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.kube.transport import (
    TransportFailure,
    encode_query,
    request_target,
)

OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)


def read_request(conn: socket.socket) -> bytes | None:
    """One request's head and body, or None when the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head


@contextmanager
def raw_server(serve: Callable[[int, socket.socket], None]) -> Iterator[tuple[str, list[bytes]]]:
    """Calls `serve(connection_number, socket)` for each accepted connection, in a thread."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # so the accept loop sees `stop` soon
    heads: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        number = 0
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            number += 1
            threading.Thread(target=serve, args=(number, conn), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", heads
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def settings(url: str, timeout: float = 5.0) -> ClientSettings:
    return ClientSettings(server=url, request_timeout=timeout)


def test_a_kept_alive_connection_the_server_drops_is_replaced_even_for_post() -> None:
    """The server reads the second request on the reused connection and closes it without an
    answer, as a server timing out an idle connection does; the POST goes once more on a
    fresh connection, and only once."""

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            while (head := read_request(conn)) is not None:
                heads.append(head)
                if number == 1 and len(heads) == 2:
                    return  # close without answering
                conn.sendall(OK)

    with raw_server(serve) as (url, heads), KubeClient(settings(url), FAST) as client:
        assert client.request("POST", "/api/v1/namespaces/ns/pods", json={}) == {"ok": True}
        assert client.request("POST", "/api/v1/namespaces/ns/pods", json={}) == {"ok": True}
    assert [h.split(b" ")[0] for h in heads] == [b"POST", b"POST", b"POST"]


def test_a_fresh_connection_closed_without_an_answer_is_not_retried_for_post() -> None:
    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            heads.append(read_request(conn) or b"")

    with (
        raw_server(serve) as (url, heads),
        KubeClient(settings(url), FAST) as client,
        pytest.raises(
            KubeConnectionError, match="RemoteProtocolError: Remote end closed"
        ) as caught,
    ):
        client.request("POST", "/api/v1/namespaces/ns/pods", json={})
    assert len(heads) == 1, "a POST the server may have acted on is not sent again"
    assert "POST /api/v1/namespaces/ns/pods" in str(caught.value)


def test_a_silent_server_is_a_read_timeout_and_a_get_is_retried() -> None:
    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            heads.append(read_request(conn) or b"")
            stop_reading.wait(10)

    stop_reading = threading.Event()
    with (  # noqa: PT012 - the server is released whatever the request does
        raw_server(serve) as (url, heads),
        KubeClient(settings(url, timeout=0.2), FAST) as client,
        pytest.raises(KubeConnectionError, match="ReadTimeout"),
    ):
        try:
            client.request("GET", "/version")
        finally:
            stop_reading.set()
    assert len(heads) == FAST.attempts


def test_a_server_that_closes_idle_connections_is_detected_before_reuse() -> None:
    """An idle connection the server already closed is noticed at checkout, not sent on."""

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            head = read_request(conn)
            heads.append(head or b"")
            conn.sendall(OK)  # then close at once: keep-alive not honoured

    with raw_server(serve) as (url, heads):
        pool = HttpPool(url, tls=None, server_name=None, connect_timeout=2, read_timeout=2)
        first = pool.send("GET", "/version", {}, {}, None)
        for _ in range(50):  # wait until the close has reached our socket
            if not pool._idle or not pool._idle[0].idle_and_open():
                break
            threading.Event().wait(0.01)
        second = pool.send("GET", "/version", {}, {}, None)
        pool.close()
    assert first.status == second.status == 200 and len(heads) == 2


def test_connection_refused_is_a_connect_error_that_was_not_sent() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    pool = HttpPool(
        f"http://127.0.0.1:{port}", tls=None, server_name=None, connect_timeout=1, read_timeout=1
    )
    with pytest.raises(TransportFailure) as caught:
        pool.send("POST", "/x", {}, {}, b"{}")
    assert caught.value.kind == "ConnectError" and caught.value.sent is False


def test_request_line_keeps_the_server_prefix_and_writes_values_as_the_api_reads_them() -> None:
    assert encode_query({"force": True, "dryRun": False, "limit": 5, "x": None}) == (
        "force=true&dryRun=false&limit=5&x="
    )
    assert encode_query({"fieldSelector": "metadata.name=a,status.phase!=Running"}) == (
        "fieldSelector=metadata.name%3Da%2Cstatus.phase%21%3DRunning"
    )
    assert request_target("/k8s/clusters/c-1", "/api/v1/pods", {"watch": "1"}) == (
        "/k8s/clusters/c-1/api/v1/pods?watch=1"
    )
    assert request_target("", "/api/v1/namespaces/a b/pods", {}) == (
        "/api/v1/namespaces/a%20b/pods"
    )


def test_a_gzip_answer_is_asked_for_and_decoded() -> None:
    import gzip

    payload = gzip.compress(b'{"items":[' + b",".join([b'{"a":1}'] * 1000) + b"]}")

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            head = read_request(conn) or b""
            heads.append(head)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
            )

    with raw_server(serve) as (url, heads), KubeClient(settings(url), FAST) as client:
        listed = client.request("GET", "/api/v1/pods")
    assert len(listed["items"]) == 1000
    assert b"\r\naccept-encoding: gzip" in heads[0].lower()


def test_after_one_dropped_connection_the_request_goes_on_a_fresh_one_not_another_idle_one() -> (
    None
):
    """Two kept-alive connections, both dropped by the server: the retry must not take the
    second stale one, or the POST would fail."""
    both_asked = threading.Barrier(2, timeout=5)

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            answered = 0
            while (head := read_request(conn)) is not None:
                heads.append(head)
                if number <= 2 and answered == 0:
                    both_asked.wait()  # two requests at once: two connections in the pool
                elif number <= 2:
                    return  # the kept-alive connection is dropped when next used
                conn.sendall(OK)
                answered += 1

    with raw_server(serve) as (url, heads), KubeClient(settings(url), FAST) as client:
        threads = [threading.Thread(target=client.request, args=("GET", "/version")) for _ in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        assert client.request("POST", "/api/v1/namespaces/ns/pods", json={}) == {"ok": True}
    assert [h.split(b" ")[0] for h in heads].count(b"POST") == 2  # the dropped one, then fresh


def pool_for(url: str, read_timeout: float = 5) -> HttpPool:
    return HttpPool(url, tls=None, server_name=None, connect_timeout=2, read_timeout=read_timeout)


def test_a_chunked_stream_yields_each_line_before_the_next_is_sent() -> None:
    """The server sends the second event only once the test has the first: a client that
    waited for more bytes than the first line would stall here until the timeout."""
    first_seen = threading.Event()

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            heads.append(read_request(conn) or b"")
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            conn.sendall(b'e\r\n{"type":"ADDED\r\n3\r\n"}\n\r\n')  # one line, two chunks
            if first_seen.wait(5):
                conn.sendall(b'13\r\n{"type":"DELETED"}\n\r\n0\r\n\r\n')

    with raw_server(serve) as (url, heads):
        pool = pool_for(url)
        response = pool.send("GET", "/api/v1/pods", {"watch": "1"}, {}, None, stream=True)
        lines = response.iter_lines()
        assert next(lines) == '{"type":"ADDED"}'
        first_seen.set()
        assert list(lines) == ['{"type":"DELETED"}']
        response.close()
        pool.close()
    assert b"\r\naccept-encoding: identity" in heads[0].lower(), "a stream is never compressed"


def test_a_close_delimited_stream_yields_lines_until_the_server_closes() -> None:
    """A followed log may come without length or chunks: its end is the connection's."""

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            read_request(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nstarted\r\n")
            conn.sendall(b"working\ndone")

    with raw_server(serve) as (url, _):
        pool = pool_for(url)
        response = pool.send("GET", "/log", {"follow": "true"}, {}, None, stream=True)
        assert list(response.iter_lines()) == ["started", "working", "done"]
        response.close()
        pool.close()


def serve_each_request(
    answers: Callable[[int, int], bytes], connections: list[int]
) -> Callable[[int, socket.socket], None]:
    """Answers request n on connection c with `answers(c, n)`, noting each request's
    connection, until the client closes or an answer says Connection: close."""

    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            while read_request(conn) is not None:
                connections.append(number)
                reply = answers(number, len(connections))
                conn.sendall(reply)
                if b"Connection: close" in reply or b"Content-Length" not in reply:
                    return

    return serve


def test_a_kept_alive_connection_carries_the_next_request() -> None:
    connections: list[int] = []
    serve = serve_each_request(lambda conn, n: OK, connections)
    with raw_server(serve) as (url, _):
        pool = pool_for(url)
        answers = [pool.send("GET", "/version", {}, {}, None) for _ in range(3)]
        pool.close()
    assert [a.content for a in answers] == [b'{"ok":true}'] * 3
    assert connections == [1, 1, 1]


def test_connection_close_and_a_close_delimited_body_are_not_reused() -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    until_close = b"HTTP/1.1 200 OK\r\n\r\nto the end"
    connections: list[int] = []
    serve = serve_each_request(lambda conn, n: [closing, until_close, OK, OK][n - 1], connections)
    with raw_server(serve) as (url, _):
        pool = pool_for(url)
        contents = [pool.send("GET", "/version", {}, {}, None).content for _ in range(4)]
        pool.close()
    assert contents == [b"{}", b"to the end", b'{"ok":true}', b'{"ok":true}']
    assert connections == [1, 2, 3, 3]


def test_an_http_1_0_answer_without_keep_alive_is_not_reused() -> None:
    old = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    connections: list[int] = []
    serve = serve_each_request(lambda conn, n: old, connections)
    with raw_server(serve) as (url, _):
        pool = pool_for(url)
        for _ in range(2):
            pool.send("GET", "/version", {}, {}, None)
        pool.close()
    assert connections == [1, 2]


def test_a_body_cut_short_is_a_remote_protocol_error_after_sending() -> None:
    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            read_request(conn)
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"items":')

    with raw_server(serve) as (url, _):
        pool = pool_for(url)
        with pytest.raises(TransportFailure, match="91 bytes short") as caught:
            pool.send("GET", "/api/v1/pods", {}, {}, None)
        pool.close()
    assert caught.value.kind == "RemoteProtocolError" and caught.value.sent is True
    assert pool._idle == [], "a connection mid-body is never kept"


def test_a_malformed_answer_is_a_remote_protocol_error_and_the_request_head_is_exact() -> None:
    def serve(number: int, conn: socket.socket) -> None:
        with conn:
            heads.append(read_request(conn) or b"")
            conn.sendall(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n")

    with raw_server(serve) as (url, heads):
        pool = pool_for(url)
        with pytest.raises(TransportFailure, match="malformed header line") as caught:
            pool.send("PUT", "/x", {}, {"Content-Type": "application/json"}, b"{}")
        pool.close()
    assert caught.value.kind == "RemoteProtocolError" and caught.value.sent is True
    port = url.rsplit(":", 1)[1]
    assert heads[0] == (
        b"PUT /x HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\n"
        b"Accept-Encoding: gzip\r\nContent-Length: 2" % port.encode()
    )


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    connections: list[int] = []
    with raw_server(serve_each_request(lambda conn, n: OK, connections)) as (url, _):
        pool = pool_for(url)
        with pytest.raises(ValueError, match="holds CR, LF or NUL"):
            pool.send("GET", "/x", {}, {"Authorization": "Bearer a\r\nX-Injected: 1"}, None)
        pool.close()
    assert connections == []
