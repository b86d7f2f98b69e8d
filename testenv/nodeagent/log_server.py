"""The kubelet's HTTPS endpoint, reduced to what `pods/log` needs: the API server calls
`GET /containerLogs/{namespace}/{pod}/{container}` with `follow`, `tailLines`,
`sinceSeconds`, `sinceTime`, `timestamps` and `limitBytes`, verifying this server's
certificate against the test CA. `/healthz` answers `ok`.
"""

from __future__ import annotations

import datetime
import json
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from testenv.nodeagent.logs import LogOptions, options_from_query, parse_cri, render, select

log = logging.getLogger(__name__)
FOLLOW_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class LogSource:
    path: Path | None  # None: the container has not started
    running: Callable[[], bool]
    waiting_reason: str = "ContainerCreating"


Lookup = Callable[[str, str, str], LogSource | str]  # a LogSource, or why there is none


class _Handler(BaseHTTPRequestHandler):
    server: KubeletServer
    protocol_version = "HTTP/1.1"  # chunked answers, as a kubelet streams logs

    def log_message(self, format: str, *args: object) -> None:
        log.debug("kubelet endpoint: " + format, *args)  # noqa: G003 - http.server hands a format

    def _answer(self, status: int, message: str) -> None:
        body = json.dumps(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
             "code": status}
        ).encode()  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/healthz":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        if len(parts) != 4 or parts[0] != "containerLogs":
            self._answer(404, f"no such path: {url.path}")
            return
        _, namespace, pod, container = parts
        try:
            options = options_from_query(parse_qs(url.query, keep_blank_values=True), _now())
        except ValueError as error:
            self._answer(400, str(error))
            return
        found = self.server.lookup(namespace, pod, container)
        if isinstance(found, str):
            self._answer(404, found)
            return
        if found.path is None or not found.path.exists():
            self._answer(
                400,
                f'container "{container}" in pod "{pod}" is waiting to start: '
                f"{found.waiting_reason}",
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            _stream(self, found, options)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client went away (a follow it no longer wants)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _chunk(handler: _Handler, data: bytes) -> None:
    if data:
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()


def _stream(handler: _Handler, source: LogSource, options: LogOptions) -> None:
    assert source.path is not None
    budget = options.limit_bytes
    with source.path.open("r", errors="replace") as handle:
        text = handle.read()
        complete, _, pending = text.rpartition("\n")
        entries = parse_cri(complete.splitlines()) if complete else []
        data = render(select(entries, options), options.timestamps)
        if budget is not None:
            data = data[:budget]
            budget -= len(data)
        _chunk(handler, data)
        if not options.follow:
            return
        while budget is None or budget > 0:
            running = source.running()  # read before the file: no line after the end is lost
            more = handle.read()
            if more:
                pending += more
                complete, _, pending = pending.rpartition("\n")
                if complete:
                    new = [
                        e
                        for e in parse_cri(complete.splitlines())
                        if options.since is None or e.time >= options.since
                    ]
                    data = render(new, options.timestamps)
                    if budget is not None:
                        data = data[:budget]
                        budget -= len(data)
                    _chunk(handler, data)
            elif not running:
                return
            else:
                time.sleep(FOLLOW_POLL_SECONDS)


class KubeletServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], cert_file: Path, key_file: Path, lookup: Lookup
    ) -> None:
        super().__init__(address, _Handler)
        self.lookup = lookup
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert_file), str(key_file))
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self._thread = threading.Thread(target=self.serve_forever, name="kubelet", daemon=True)

    def start(self) -> KubeletServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
