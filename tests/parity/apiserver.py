"""The parity test's second judge: the real kube-apiserver of the test control plane.

The recording endpoint checks that we send what spark-submit sent; it cannot say whether
the API server accepts it (its YAML decoder refused surrogate-pair escapes that the
recorder parsed happily). So every request of a parity run is also sent on, as it came,
to the real API server, into one namespace of ours: only the namespace in the path and
in `"namespace":"..."` of the body is rewritten, the rest is the same bytes. What was
created is deleted after each case (grace period 0, so a fixed pod name is free again).
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import threading
from urllib.parse import urlsplit

_NAMESPACE_IN_PATH = re.compile(r"/namespaces/[^/?]+")
# Compact JSON as sent; a quote inside a string value is escaped, so this cannot match there.
_NAMESPACE_IN_BODY = re.compile(rb'"namespace":"[^"]*"')


def _status(code: int, message: str) -> bytes:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
              "reason": "BadGateway", "message": message}  # fmt: skip
    return json.dumps(status).encode()


class ApiServerUpstream:
    """Sends the recorder's requests to kube-apiserver (admin client certificate)."""

    def __init__(self, server: str, ca_file: str, cert_file: str, key_file: str, namespace: str):
        url = urlsplit(server)
        self._host, self._port = url.hostname or "127.0.0.1", url.port or 443
        self._context = ssl.create_default_context(cafile=ca_file)
        self._context.load_cert_chain(cert_file, key_file)
        self.namespace = namespace
        self._connection: http.client.HTTPSConnection | None = None
        self._lock = threading.Lock()
        self.created: list[str] = []  # object paths, to delete after the case

    def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        path = _NAMESPACE_IN_PATH.sub(f"/namespaces/{self.namespace}", path, count=1)
        body = _NAMESPACE_IN_BODY.sub(f'"namespace":"{self.namespace}"'.encode(), body)
        status, data = self._request(method, path, headers, body)
        if method in ("POST", "PATCH") and status < 300:
            name = json.loads(data)["metadata"]["name"]
            collection = path.split("?", 1)[0]
            item = collection if method == "PATCH" else f"{collection}/{name}"
            if item not in self.created:
                self.created.append(item)
        elif method == "DELETE" and status < 300 and path.split("?", 1)[0] in self.created:
            self.created.remove(path.split("?", 1)[0])
        return status, data

    def clean_up(self) -> list[str]:
        """Delete what the case created, newest first; returns what could not be deleted."""
        left = []
        for path in reversed(self.created):
            status, data = self._request("DELETE", f"{path}?gracePeriodSeconds=0", {}, b"")
            if status >= 300 and status != 404:
                left.append(f"{path}: {status} {data[:200]!r}")
        self.created.clear()
        return left

    def _request(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        with self._lock:
            for attempt in (1, 2):  # a kept-alive connection the server closed: once more
                if self._connection is None:
                    self._connection = http.client.HTTPSConnection(
                        self._host, self._port, context=self._context, timeout=30
                    )
                try:
                    self._connection.request(method, path, body=body or None, headers=headers)
                    response = self._connection.getresponse()
                    return response.status, response.read()
                except (http.client.HTTPException, OSError) as error:
                    self.close_connection()
                    if attempt == 2:  # answer, so the test names the cause
                        return 502, _status(502, f"sending on to kube-apiserver failed: {error!r}")
        raise AssertionError("unreachable")

    def close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
