"""A loopback HTTP server that plays the Kubernetes API server for one submission.

It records every request (method, path, query, content type, parsed body) and answers the
way an API server would for the calls a submission makes: a create or a server-side apply
echoes the object back with a uid, a resourceVersion and a creation timestamp; a delete
answers with a Status. Failures can be injected per request so the submission's rollback
is testable without a cluster. With an `upstream` (a real kube-apiserver), each request is
recorded and then sent on as it came, byte for byte, and the server's answer goes back.

Used three ways: by the parity runner (real spark-submit talks to it), by the parity test
(sparkk8s-submit talks to it), and by the benchmark. `python -m testenv.harness.recorder`
serves until interrupted and prints the port.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import yaml

from testenv.harness.loopback import LoopbackServer

VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T07:28:49Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}

# /api/v1/namespaces/<ns>/<plural>[/<name>[/<sub>]] and /apis/<group>/<version>/namespaces/...
_OBJECT_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"/namespaces/(?P<namespace>[^/]+)/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


@dataclass
class InjectedFailure:
    """Answer the `nth` request (1-based, counting only matching ones) with an error status."""

    method: str
    path_pattern: str
    status: int
    reason: str = "Forbidden"
    message: str = "injected failure"
    nth: int = 1
    seen: int = 0
    applied: bool = False  # the request takes effect, and then the error is answered

    def matches(self, method: str, path: str) -> bool:
        if method != self.method or not re.search(self.path_pattern, path):
            return False
        self.seen += 1
        return self.seen == self.nth


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str
    body: Any
    raw: bytes = b""  # the body's bytes as sent (not in the goldens)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "content_type": self.content_type,
            "body": self.body,
        }


@dataclass
class Recording:
    requests: list[RecordedRequest] = field(default_factory=list)
    # Objects "stored" by path, so a GET or a DELETE after a create behaves plausibly.
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[InjectedFailure] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def as_list(self) -> list[dict[str, Any]]:
        with self.lock:
            return [request.as_dict() for request in self.requests]

    def raw_bodies(self) -> list[bytes]:
        with self.lock:
            return [request.raw for request in self.requests]


def _parse_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8")
    try:
        if "yaml" in content_type:
            return yaml.safe_load(text)
        return json.loads(text)
    except (ValueError, yaml.YAMLError):
        return text


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 400 else "Success",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _stored_path(path: str, body: dict[str, Any] | None) -> str:
    """The path of the object itself (a POST goes to the collection, the object lives below)."""
    match = _OBJECT_PATH.match(path)
    if match and not match["name"] and isinstance(body, dict):
        return f"{path}/{body.get('metadata', {}).get('name', '')}"
    return path


class _Handler(BaseHTTPRequestHandler):
    server: RecordingServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes; without this, Nagle plus the client's
        # delayed ACK adds ~40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test and benchmark output clean

    def _answer(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        body = _parse_body(raw, content_type)
        recording = self.server.recording
        with recording.lock:
            if split.path not in self.server.unrecorded_paths:
                recording.requests.append(
                    RecordedRequest(
                        self.command, split.path, parse_qs(split.query), content_type, body, raw
                    )
                )
            failure = next(
                (f for f in recording.failures if f.matches(self.command, split.path)), None
            )
        if failure is not None:
            if failure.applied:
                self.server.respond(self.command, split.path, body)
            self._answer(failure.status, _status(failure.status, failure.reason, failure.message))
            return
        upstream = self.server.upstream
        if upstream is not None and split.path != "/version":
            headers = {"Content-Type": self.headers.get("Content-Type") or ""}
            self._answer_raw(*upstream.send(self.command, self.path, headers, raw))
            return
        code, payload = self.server.respond(self.command, split.path, body)
        self._answer(code, payload)

    def _answer_raw(self, code: int, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle  # noqa: N815 (http.server's names)


class Upstream(Protocol):
    """A real API server behind the recorder: every request is recorded, then sent on."""

    def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]: ...


class RecordingServer(LoopbackServer):
    def __init__(self, port: int = 0, upstream: Upstream | None = None) -> None:
        super().__init__(_Handler, port)
        self.upstream = upstream
        self.recording = Recording()
        self.unrecorded_paths: set[str] = set()

    def reset(self) -> None:
        with self.recording.lock:
            self.recording.requests.clear()
            self.recording.objects.clear()
            self.recording.failures.clear()

    def fail(self, failure: InjectedFailure) -> None:
        with self.recording.lock:
            self.recording.failures.append(failure)

    def respond(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/version":
            return 200, VERSION_INFO
        if method in ("POST", "PATCH", "PUT") and isinstance(body, dict):
            return self._store(method, path, body)
        objects = self.recording.objects
        if method == "GET":
            if path in objects:
                return 200, objects[path]
            if _OBJECT_PATH.match(path) and _OBJECT_PATH.match(path)["name"]:  # type: ignore[index]
                return 404, _status(404, "NotFound", f"{path} not found")
            return 200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}
        if method == "DELETE":
            with self.recording.lock:
                removed = objects.pop(path, None)
            if removed is None:
                return 404, _status(404, "NotFound", f"{path} not found")
            return 200, _status(200, "", "deleted")
        return 404, _status(404, "NotFound", f"{method} {path} is not served here")

    def _store(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        stored = json.loads(json.dumps(body))
        metadata = stored.setdefault("metadata", {})
        match = _OBJECT_PATH.match(path)
        if match:
            metadata.setdefault("namespace", match["namespace"])
        key = _stored_path(path, body)
        with self.recording.lock:
            existing = self.recording.objects.get(key)
            if method == "POST" and existing is not None:
                name = metadata.get("name")
                return 409, _status(409, "AlreadyExists", f'"{name}" already exists')
            metadata["uid"] = (existing or {}).get("metadata", {}).get("uid") or str(uuid.uuid4())
            metadata["resourceVersion"] = str(len(self.recording.requests))
            metadata["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self.recording.objects[key] = stored
        return 201 if method == "POST" else 200, stored


def main() -> None:
    """Serve until interrupted; write the recording to the file named by the first argument."""
    import sys

    with RecordingServer() as server:
        print(server.port, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        if len(sys.argv) > 1:
            with open(sys.argv[1], "w") as out:
                json.dump(server.recording.as_list(), out, indent=1)


if __name__ == "__main__":
    main()
