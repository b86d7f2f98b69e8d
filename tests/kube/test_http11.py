"""The HTTP/1.1 wire rules on byte strings: the request head, the status line and fields,
the body's framing (Content-Length, chunked with extensions and trailers, close), interim
and bodiless answers, keep-alive, and what a malformed or oversized answer raises."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.kube import http11
from airflow_provider_sparkk8s.kube.http11 import Framing, Headers, ProtocolError


def answer(raw: bytes, method: str = "GET") -> tuple[http11.ResponseHead, Framing, bytes, bytes]:
    """Head, framing, body and what is left for the next answer, read from `raw`."""
    reader = io.BytesIO(raw)
    head = http11.read_response_head(reader)
    body = http11.framing(method, head)
    return head, body, b"".join(http11.body_pieces(reader, body)), reader.read()


def test_a_content_length_body_stops_at_its_length_and_leaves_the_next_answer() -> None:
    head, body, content, rest = answer(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
        b'{"ok":true}HTTP/1.1 204 No Content\r\n\r\n'
    )
    assert (head.version, head.status, head.reason) == ("HTTP/1.1", 200, "OK")
    assert body == Framing("length", 11) and content == b'{"ok":true}'
    assert rest == b"HTTP/1.1 204 No Content\r\n\r\n"
    assert http11.keeps_alive(head, body)


def test_a_chunked_body_with_extensions_and_trailers_is_joined_and_the_trailers_consumed() -> None:
    head, body, content, rest = answer(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n"
        b'7 ; quoted="x;y"\r\n, world\r\n'
        b"0\r\nExpires: never\r\nX-Checksum: abc\r\n\r\n"
        b"NEXT"
    )
    assert body == Framing("chunked") and content == b"hello, world"
    assert rest == b"NEXT", "the trailer section is read to its blank line, no further"
    assert http11.keeps_alive(head, body)


def test_transfer_encoding_wins_over_content_length() -> None:
    _, body, content, _ = answer(
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nok\r\n0\r\n\r\n"
    )
    assert body == Framing("chunked") and content == b"ok"


def test_a_body_without_length_or_chunks_runs_to_the_close_and_ends_keep_alive() -> None:
    head, body, content, _ = answer(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nline 1\nrest"
    )
    assert body == Framing("close") and content == b"line 1\nrest"
    assert not http11.keeps_alive(head, body)


def test_interim_1xx_answers_are_skipped() -> None:
    head, _, content, _ = answer(
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}"
    )
    assert head.status == 201 and "Link" not in head.headers and content == b"{}"


@pytest.mark.parametrize(("status", "method"), [(204, "DELETE"), (304, "GET"), (200, "HEAD")])
def test_204_304_and_answers_to_head_have_no_body_whatever_their_fields_say(
    status: int, method: str
) -> None:
    head, body, content, rest = answer(
        b"HTTP/1.1 %d X\r\nContent-Length: 50\r\n\r\nHTTP/1.1 200 OK\r\n" % status, method
    )
    assert body == Framing("length", 0) and content == b""
    assert rest == b"HTTP/1.1 200 OK\r\n" and http11.keeps_alive(head, body)


def test_header_names_are_case_insensitive_and_repeated_fields_are_joined() -> None:
    head = http11.read_response_head(
        io.BytesIO(
            b"HTTP/1.1 429 Too Many Requests\r\nretry-after:  3 \r\n"
            b'Warning: one\r\nWARNING: two\r\nContent-Type: text/plain; Charset="ISO-8859-1"\r\n'
            b"X-Folded: first\r\n  second\r\n\r\n"
        )
    )
    assert head.headers["Retry-After"] == head.headers.get("RETRY-AFTER") == "3"
    assert head.headers.get("Warning") == "one, two"
    assert head.headers.get("Missing", "default") == "default" and "missing" not in head.headers
    assert head.headers.get_content_charset() == "iso-8859-1"
    assert head.headers["x-folded"] == "first second"
    assert list(head.headers) == ["retry-after", "Warning", "Content-Type", "X-Folded"]


def test_the_charset_is_none_without_one() -> None:
    assert Headers([("Content-Type", "application/json")]).get_content_charset() is None
    assert Headers().get_content_charset() is None


@pytest.mark.parametrize(
    ("version_and_connection", "alive"),
    [
        (b"HTTP/1.1 200 OK\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: Close\r\n", False),
        (b"HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\n", False),
        (b"HTTP/1.0 200 OK\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n", True),
    ],
)
def test_keep_alive_follows_the_version_and_the_connection_field(
    version_and_connection: bytes, alive: bool
) -> None:
    head, body, _, _ = answer(version_and_connection + b"Content-Length: 0\r\n\r\n")
    assert http11.keeps_alive(head, body) is alive


def test_a_closed_connection_before_any_byte_is_its_own_error() -> None:
    with pytest.raises(http11.ClosedWithoutAnswer, match="without an answer"):
        http11.read_response_head(io.BytesIO(b""))
    with pytest.raises(ProtocolError, match="inside the status line") as caught:
        http11.read_response_head(io.BytesIO(b"HTTP/1.1 20"))
    assert not isinstance(caught.value, http11.ClosedWithoutAnswer)


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", "not HTTP/1.x"),
        (b"ICY 200 OK\r\n\r\n", "not HTTP/1.x"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "three-digit status"),
        (b"HTTP/1.1 abc OK\r\n\r\n", "three-digit status"),
        (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "holds CR or NUL"),
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n", "closed inside the header section"),
    ],
)
def test_a_malformed_head_is_a_protocol_error_naming_the_fault(raw: bytes, named: str) -> None:
    with pytest.raises(ProtocolError, match=named):
        http11.read_response_head(io.BytesIO(raw))


@pytest.mark.parametrize(
    ("length", "named"),
    [(b"-1", "malformed Content-Length"), (b"5, 6", "malformed Content-Length"), (b"0x5", "0x5")],
)
def test_a_bad_content_length_is_a_protocol_error(length: bytes, named: str) -> None:
    head = http11.read_response_head(
        io.BytesIO(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n")
    )
    with pytest.raises(ProtocolError, match=named):
        http11.framing("GET", head)


def test_equal_repeated_content_lengths_are_one_length() -> None:
    _, body, content, _ = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok")
    assert body == Framing("length", 2) and content == b"ok"


@pytest.mark.parametrize(
    ("chunks", "named"),
    [
        (b"zz\r\nhello\r\n0\r\n\r\n", "malformed chunk size b'zz\\\\r\\\\n'"),
        (b"0x5\r\nhello\r\n0\r\n\r\n", "malformed chunk size"),
        (b"-5\r\nhello\r\n0\r\n\r\n", "malformed chunk size"),
        (b"1_0\r\nhello\r\n0\r\n\r\n", "malformed chunk size"),
        (b"5\r\nhelloXX0\r\n\r\n", "not followed by CRLF"),
        (b"5\r\nhel", "ended 2 bytes short of a chunk of 5 bytes"),
        (b"5\r\nhello\r\n", "ended before its last chunk"),
        (b"0\r\nTrailer: x\r\n", "closed inside the trailer section"),
    ],
)
def test_a_bad_or_cut_chunked_body_is_a_protocol_error(chunks: bytes, named: str) -> None:
    reader = io.BytesIO(chunks)
    with pytest.raises(ProtocolError, match=named):
        b"".join(http11.body_pieces(reader, Framing("chunked")))


def test_a_body_cut_short_of_its_length_says_by_how_much() -> None:
    with pytest.raises(ProtocolError, match="ended 6 bytes short of its Content-Length of 10"):
        b"".join(http11.body_pieces(io.BytesIO(b"four"), Framing("length", 10)))


def test_an_oversized_header_section_is_refused() -> None:
    big = b"X-Big: " + b"a" * http11.MAX_HEADER_BYTES + b"\r\n"
    with pytest.raises(ProtocolError, match="header section is longer than 65536 bytes"):
        http11.read_response_head(io.BytesIO(b"HTTP/1.1 200 OK\r\n" + big + b"\r\n"))
    many = b"".join(b"X-%d: v\r\n" % n for n in range(http11.MAX_HEADERS + 1))
    with pytest.raises(ProtocolError, match="more than 100 fields"):
        http11.read_response_head(io.BytesIO(b"HTTP/1.1 200 OK\r\n" + many + b"\r\n"))
    exactly = b"".join(b"X-%d: v\r\n" % n for n in range(http11.MAX_HEADERS))
    head = http11.read_response_head(io.BytesIO(b"HTTP/1.1 200 OK\r\n" + exactly + b"\r\n"))
    assert len(head.headers) == http11.MAX_HEADERS


def test_an_oversized_status_line_is_refused() -> None:
    line = b"HTTP/1.1 200 " + b"a" * http11.MAX_LINE + b"\r\n\r\n"
    with pytest.raises(ProtocolError, match="status line is longer than 65536 bytes"):
        http11.read_response_head(io.BytesIO(line))


def test_lines_are_yielded_as_soon_as_complete_across_pieces() -> None:
    """The order of reads and lines shows no line waits for a later piece."""
    seen: list[str] = []

    def arriving() -> Iterator[bytes]:
        for piece in [b'{"a":', b"1}\r\n{", b'"b":2}\n{"c":3}\n', b"tail"]:
            seen.append(f"piece {piece!r}")
            yield piece

    for line in http11.lines(arriving()):
        seen.append(f"line {line!r}")
    assert seen == [
        "piece b'{\"a\":'",
        "piece b'1}\\r\\n{'",
        "line b'{\"a\":1}'",
        'piece b\'"b":2}\\n{"c":3}\\n\'',
        "line b'{\"b\":2}'",
        "line b'{\"c\":3}'",
        "piece b'tail'",
        "line b'tail'",
    ]


def test_the_request_head_carries_host_content_length_and_the_given_fields() -> None:
    head = http11.request_head(
        "POST", "/api/v1/namespaces/ns/pods?dryRun=All", "example:6443",
        {"Accept": "application/json", "Content-Type": "application/json"}, b"{}",
    )  # fmt: skip
    assert head == (
        b"POST /api/v1/namespaces/ns/pods?dryRun=All HTTP/1.1\r\nHost: example:6443\r\n"
        b"Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("method", "has_length"), [("POST", True), ("PATCH", True), ("GET", False)]
)
def test_an_empty_post_put_or_patch_says_content_length_0_and_a_get_nothing(
    method: str, has_length: bool
) -> None:
    head = http11.request_head(method, "/x", "h", {}, None)
    assert (b"\r\nContent-Length: 0\r\n" in head) is has_length


def test_a_given_host_is_not_sent_twice() -> None:
    head = http11.request_head("GET", "/", "h", {"host": "other"}, None)
    assert head == b"GET / HTTP/1.1\r\nhost: other\r\n\r\n"


def test_the_host_field_names_the_port_only_when_it_is_not_the_default() -> None:
    assert http11.host_field("api.example", 443, 443) == "api.example"
    assert http11.host_field("api.example", 6443, 443) == "api.example:6443"
    assert http11.host_field("::1", 8080, 80) == "[::1]:8080"


@pytest.mark.parametrize(
    ("method", "target", "headers", "named"),
    [
        ("GET", "/", {"X-Evil": "a\r\nInjected: yes"}, "value of header 'X-Evil'"),
        ("GET", "/", {"X-Evil": "a\nb"}, "holds CR, LF or NUL"),
        ("GET", "/", {"X-Evil\r\nInjected": "yes"}, "is not an HTTP token"),
        ("GET", "/", {"Bad Name": "x"}, "is not an HTTP token"),
        ("GET", "/a b", {}, "space or a control character"),
        ("GET", "/a\r\nb", {}, "space or a control character"),
        ("GE T", "/", {}, "is not a token"),
    ],
)
def test_a_request_that_could_split_its_head_is_refused_before_sending(
    method: str, target: str, headers: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        http11.request_head(method, target, "h", headers, None)
