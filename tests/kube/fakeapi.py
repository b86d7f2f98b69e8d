"""A scripted HTTP(S) server on 127.0.0.1 standing in for the API server in unit tests.

Each request is recorded; the reply comes from a handler function, so a test states exactly
what the "API server" does (fail twice with 503, then answer; stream watch lines; ...).
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes
    client_port: int


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict | list | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None  # streamed with chunked encoding, then the stream ends

    @staticmethod
    def status_body(code: int, reason: str, message: str) -> Reply:
        return Reply(
            code,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": reason,
                "message": message,
                "code": code,
            },
        )


Handler = Callable[[Recorded], Reply]


class FakeApiServer:
    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None):
        self.handler = handler
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        server = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like the API server
            disable_nagle_algorithm = True  # as Go servers do; else 40 ms delayed-ACK stalls

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                recorded = Recorded(
                    self.command,
                    url.path,
                    dict(parse_qsl(url.query)),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    self.client_address[1],
                )
                with server._lock:
                    server.requests.append(recorded)
                reply = server.handler(recorded)
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.chunks is not None:
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    return
                payload = reply.body
                if isinstance(payload, (dict, list)):
                    payload = json.dumps(payload).encode()
                payload = payload or b""
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 (http.server's names)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._httpd.daemon_threads = True
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def scripted(*replies: Reply, then: Reply | None = None) -> Handler:
    """A handler answering with `replies` in order, then `then` (default: 200 {})."""
    queue = list(replies)
    lock = threading.Lock()

    def handler(_: Recorded) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return then or Reply(200, {})

    return handler
