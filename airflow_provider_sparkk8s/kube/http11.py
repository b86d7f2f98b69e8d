"""HTTP/1.1 on the wire, as the sync client speaks it: a request head out; a status line,
header fields and a framed body in.

Everything here works on bytes or on a buffered binary reader (`socket.makefile("rb")`),
never on a socket itself, so each rule is tested with byte strings. `http_pool` owns the
sockets. A peer that breaks the protocol (a malformed status line or field, a bad chunk
size, a body cut short, a header section over its limits) raises `ProtocolError`, whose
message names what was wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from airflow_provider_sparkk8s.records import record

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Literal, Protocol

MAX_LINE = 65536  # a status line or a chunk-size line
MAX_HEADER_BYTES = 65536  # a whole header (or trailer) section
MAX_HEADERS = 100
PIECE = 65536  # the most a body read asks for at once
METHODS_WITH_BODY = ("POST", "PUT", "PATCH")  # these say Content-Length: 0 when empty
_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_BLANK = (b"\r\n", b"\n")


if TYPE_CHECKING:

    class Reader(Protocol):
        """What is read from: `socket.makefile("rb")`, or `io.BytesIO` in tests."""

        def readline(self, size: int | None = -1, /) -> bytes: ...

        def read1(self, size: int = -1, /) -> bytes: ...

        def close(self) -> None: ...


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as we read it."""


class ClosedWithoutAnswer(ProtocolError):
    """The connection ended before the first byte of an answer: the request went unread."""


class Headers(Mapping[str, str]):
    """Header fields by case-insensitive name; repeated fields are joined with ", "."""

    def __init__(self, fields: Iterable[tuple[str, str]] = ()) -> None:
        self._fields: dict[str, tuple[str, str]] = {}  # lower-case name -> (name, value)
        for name, value in fields:
            key = name.lower()
            earlier = self._fields.get(key)
            self._fields[key] = (earlier[0], f"{earlier[1]}, {value}") if earlier else (name, value)

    def __getitem__(self, name: str) -> str:
        return self._fields[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._fields

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._fields.values())

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        return f"Headers({list(self._fields.values())!r})"

    def tokens(self, name: str) -> list[str]:
        """A comma-separated field (Connection, Transfer-Encoding) as lower-case tokens."""
        return [token.strip().lower() for token in self.get(name, "").split(",") if token.strip()]

    def get_content_charset(self) -> str | None:
        """Content-Type's `charset=`, lower-case, or None (the name email.message gave it)."""
        for parameter in self.get("Content-Type", "").split(";")[1:]:
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "charset":
                return value.strip().strip('"').lower() or None
        return None


@record
class ResponseHead:
    version: str  # "HTTP/1.1" or "HTTP/1.0"
    status: int
    reason: str
    headers: Headers


@record
class Framing:
    """Where an answer's body ends: after `length` bytes, at the last chunk, or at close."""

    kind: Literal["length", "chunked", "close"]
    length: int = 0


def host_field(host: str, port: int, default_port: int) -> str:
    """The Host value: the port only when it is not the scheme's own, an IPv6 in brackets."""
    name = f"[{host}]" if ":" in host else host
    return name if port == default_port else f"{name}:{port}"


def request_head(
    method: str, target: str, host: str, headers: Mapping[str, str], body: bytes | None
) -> bytes:
    """The request line and header fields, with Host and Content-Length unless given.

    ValueError for a method, target, name or value that could end the line or the head
    early (CR, LF, spaces in a name): such a request is never sent.
    """
    if not _is_token(method.encode("ascii")):
        raise ValueError(f"HTTP method {method!r} is not a token")
    if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in target):
        raise ValueError(f"request target {target!r} holds a space or a control character")
    given = {name.lower() for name in headers}
    fields = [] if "host" in given else [("Host", host)]
    fields.extend(headers.items())
    if "content-length" not in given and (body is not None or method in METHODS_WITH_BODY):
        fields.append(("Content-Length", str(len(body or b""))))
    lines = [f"{method} {target} HTTP/1.1".encode("ascii")]
    for name, value in fields:
        if not _is_token(name.encode("latin-1")):
            raise ValueError(f"header name {name!r} is not an HTTP token")
        if any(char in value for char in "\r\n\0"):
            raise ValueError(f"the value of header {name!r} holds CR, LF or NUL")
        lines.append(f"{name}: {value}".encode("latin-1"))
    return b"\r\n".join(lines) + b"\r\n\r\n"


def read_response_head(reader: Reader) -> ResponseHead:
    """The final answer's status line and fields; 1xx interim answers are skipped."""
    first = True
    while True:
        line = reader.readline(MAX_LINE + 1)
        if first and not line:
            raise ClosedWithoutAnswer("Remote end closed the connection without an answer")
        first = False
        version, status, reason = parse_status_line(_whole_line(line, "status line"))
        headers = read_fields(reader)
        if status >= 200:
            return ResponseHead(version, status, reason, headers)


def parse_status_line(line: bytes) -> tuple[str, int, str]:
    """`HTTP/1.1 200 OK` as ("HTTP/1.1", 200, "OK"); the reason may be empty."""
    text = line.rstrip(b"\r\n").decode("latin-1")
    version, _, rest = text.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(version) != 8 or not version[7].isdigit():
        raise ProtocolError(f"malformed status line {text!r}: not HTTP/1.x")
    if len(code) != 3 or not code.isdigit() or not 100 <= int(code) <= 599:
        raise ProtocolError(f"malformed status line {text!r}: no three-digit status code")
    return version, int(code), reason.strip()


def read_fields(reader: Reader, section: str = "header") -> Headers:
    """Field lines up to the blank line; `section` names them in errors ("trailer")."""
    fields: list[tuple[str, str]] = []
    size = 0
    while True:
        line = reader.readline(MAX_HEADER_BYTES - size + 1)
        size += len(line)
        if size > MAX_HEADER_BYTES:
            raise ProtocolError(f"the {section} section is longer than {MAX_HEADER_BYTES} bytes")
        if not line.endswith(b"\n"):
            raise ProtocolError(f"the connection closed inside the {section} section")
        if line in _BLANK:
            return Headers(fields)
        if line[0] in b" \t" and fields:  # obsolete line folding: the value goes on
            folded_name, folded_value = fields[-1]
            fields[-1] = (folded_name, f"{folded_value} {_field_value(line, section)}".strip())
            continue
        if len(fields) == MAX_HEADERS:
            raise ProtocolError(f"the {section} section has more than {MAX_HEADERS} fields")
        name, colon, value = line.partition(b":")
        if not colon or not _is_token(name):
            raise ProtocolError(f"malformed {section} line {line!r}")
        fields.append((name.decode("ascii"), _field_value(value, section)))


def framing(method: str, head: ResponseHead) -> Framing:
    """How the body of the answer to `method` is delimited (RFC 9112, section 6.3)."""
    if method == "HEAD" or head.status in (204, 304):
        return Framing("length", 0)
    codings = head.headers.tokens("Transfer-Encoding")
    if codings:  # it overrides any Content-Length
        return Framing("chunked") if codings[-1] == "chunked" else Framing("close")
    if "Content-Length" not in head.headers:
        return Framing("close")
    lengths = {value.strip() for value in head.headers["Content-Length"].split(",")}
    length = lengths.pop() if len(lengths) == 1 else ""
    if not length.isdigit() or not length.isascii():
        raise ProtocolError(f"malformed Content-Length {head.headers['Content-Length']!r}")
    return Framing("length", int(length))


def keeps_alive(head: ResponseHead, body: Framing) -> bool:
    """Whether the connection can carry the next request once this body is read."""
    if body.kind == "close":
        return False
    connection = head.headers.tokens("Connection")
    if "close" in connection:
        return False
    return head.version != "HTTP/1.0" or "keep-alive" in connection


def body_pieces(reader: Reader, body: Framing) -> Iterator[bytes]:
    """The body's bytes as they arrive; ProtocolError when it ends before its framing does."""
    if body.kind == "length":
        yield from _exactly(reader, body.length, f"its Content-Length of {body.length} bytes")
    elif body.kind == "chunked":
        yield from _chunks(reader)
    else:
        while piece := reader.read1(PIECE):
            yield piece


def lines(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """Each line of a body (without its line end) as soon as its LF has arrived."""
    pending: list[bytes] = []  # the start of a line that is still arriving
    for piece in pieces:
        start = 0
        while (end := piece.find(b"\n", start)) != -1:
            pending.append(piece[start:end])
            yield b"".join(pending).removesuffix(b"\r")
            pending, start = [], end + 1
        if start < len(piece):
            pending.append(piece[start:])
    if pending:
        yield b"".join(pending).removesuffix(b"\r")


def _chunks(reader: Reader) -> Iterator[bytes]:
    while True:
        line = reader.readline(MAX_LINE + 1)
        if not line:
            raise ProtocolError("the body ended before its last chunk")
        size = _chunk_size(_whole_line(line, "chunk-size line"))
        if size == 0:
            read_fields(reader, "trailer")  # nothing we use is sent as a trailer
            return
        yield from _exactly(reader, size, f"a chunk of {size} bytes")
        if reader.readline(3) not in _BLANK:
            raise ProtocolError(f"a chunk of {size} bytes is not followed by CRLF")


def _chunk_size(line: bytes) -> int:
    digits = line.rstrip(b"\r\n").partition(b";")[0].strip(b" \t")  # extensions ignored
    if not digits or len(digits) > 16 or not all(byte in _HEX for byte in digits):
        raise ProtocolError(f"malformed chunk size {line!r}")
    return int(digits, 16)


def _exactly(reader: Reader, length: int, what: str) -> Iterator[bytes]:
    remaining = length
    while remaining:
        piece = reader.read1(min(remaining, PIECE))
        if not piece:
            raise ProtocolError(f"the body ended {remaining} bytes short of {what}")
        remaining -= len(piece)
        yield piece


def _whole_line(line: bytes, what: str) -> bytes:
    if len(line) > MAX_LINE:
        raise ProtocolError(f"the {what} is longer than {MAX_LINE} bytes")
    if not line.endswith(b"\n"):
        raise ProtocolError(f"the connection closed inside the {what} {line!r}")
    return line


def _field_value(raw: bytes, section: str) -> str:
    value = raw.strip(b" \t\r\n")
    if b"\r" in value or b"\0" in value:
        raise ProtocolError(f"a {section} value holds CR or NUL: {raw!r}")
    return value.decode("latin-1")


def _is_token(name: bytes) -> bool:
    return bool(name) and all(byte in _TOKEN for byte in name)
