"""A minimal HTTPS client for the launcher itself (health checks, nodes, token
requests), authenticated with the admin client certificate. Tests use the
`kubernetes` package or the provider's own client instead."""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path
from typing import Any


class AdminHttpError(Exception):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:500]}")
        self.status = status


class AdminHttp:
    def __init__(
        self, port: int, ca_file: Path, cert_file: Path, key_file: Path, timeout: float = 10.0
    ) -> None:
        self._port = port
        self._timeout = timeout
        self._context = ssl.create_default_context(cafile=str(ca_file))
        self._context.load_cert_chain(str(cert_file), str(key_file))

    def raw(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self._port, context=self._context, timeout=self._timeout
        )
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"Accept": "application/json"}
            if payload is not None:
                headers["Content-Type"] = "application/json"
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.raw(method, path, body)
        if status >= 300:
            raise AdminHttpError(method, path, status, data.decode(errors="replace"))
        return json.loads(data) if data else None
