"""A container registry that holds no image: the OCI distribution API's answers for pulls that
cannot succeed, so the real node's containerd meets a registry's own "not found" (the node
has no network, and a made-up host only gets it a DNS failure).

It answers by the repository's name, the part of the image after the registry's address:
- `.../unavailable...`: 503 to everything: a registry in trouble (transient);
- `.../denied...`: as Docker Hub answers for a repository that does not exist: 401 with a
  Bearer challenge, an anonymous token from its token endpoint, then 401 again with
  `error="insufficient_scope"` (containerd: "pull access denied, repository does not exist
  or may require authorization");
- anything else: 404 `MANIFEST_UNKNOWN` for its manifests (containerd: "REF: not found").
`GET /v2/` answers 200, as a registry's version check expects. Plain HTTP on loopback: the
node's containerd reaches it at `127.0.0.1:PORT` (`RealNode.expose_host_port`), and
containerd speaks HTTP to a loopback registry without any configuration.

    with MissingImageRegistry() as registry:   # a port of its own on 127.0.0.1
        image = f"127.0.0.1:{registry.port}/sparkk8s/missing:4.3.0"
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from testenv.harness.loopback import LoopbackServer

# /v2/<name>/manifests/<reference> and /v2/<name>/blobs/<digest>; a name has slashes.
_OBJECT = re.compile(r"^/v2/(?P<name>.+)/(?P<kind>manifests|blobs)/(?P<reference>[^/]+)$")
_ERRORS = {
    "manifests": ("MANIFEST_UNKNOWN", "manifest unknown"),
    "blobs": ("BLOB_UNKNOWN", "blob unknown to registry"),
}
TOKEN = "anonymous"


class _Handler(BaseHTTPRequestHandler):
    server: MissingImageRegistry
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return None

    def _handle(self) -> None:
        path = urlsplit(self.path).path
        self.server.record(self.command, self.path)
        if path == "/token":
            self._json(200, {"token": TOKEN, "access_token": TOKEN})
        elif path in ("/v2", "/v2/"):
            self._json(200, {})
        elif (found := _OBJECT.match(path)) is None:
            self._json(404, _error("NAME_UNKNOWN", "repository name not known to registry"))
        elif "unavailable" in found["name"]:
            self._json(503, _error("UNAVAILABLE", "service unavailable"))
        elif "denied" in found["name"]:
            self._denied(found["name"])
        else:
            code, message = _ERRORS[found["kind"]]
            self._json(
                404, _error(code, message, {"name": found["name"], "ref": found["reference"]})
            )

    def _denied(self, name: str) -> None:
        """Docker Hub's answer for a repository it does not have: no token is enough."""
        challenge = (
            f'Bearer realm="http://{self.headers.get("Host")}/token",service="sparkk8s-registry",'
            f'scope="repository:{name}:pull"'
        )
        if self.headers.get("Authorization") == f"Bearer {TOKEN}":
            challenge += ',error="insufficient_scope"'
        body = _error("UNAUTHORIZED", "authentication required", [{"Type": "repository",
                      "Name": name, "Action": "pull"}])  # fmt: skip
        self._json(401, body, {"WWW-Authenticate": challenge})

    def _json(self, code: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = _handle  # noqa: N815 (http.server's names)


def _error(code: str, message: str, detail: object = None) -> dict[str, object]:
    return {"errors": [{"code": code, "message": message, "detail": detail}]}


class MissingImageRegistry(LoopbackServer):
    def __init__(self, port: int = 0) -> None:
        super().__init__(_Handler, port)
        self.requests: list[tuple[str, str]] = []  # (method, path): what was asked, in order
        self._lock = threading.Lock()

    def record(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))
