"""Toxiproxy, the fault-injecting TCP proxy, between our client and kube-apiserver.

    with Toxiproxy(workdir) as toxi:
        proxy = toxi.proxy("apiserver", upstream="127.0.0.1:6443")
        with proxy.toxic("latency", latency=500, jitter=250):
            ...  # every byte through proxy.listen is late

The binary comes from `testenv/build_toxiproxy.sh` (built from its Go module into
~/.cache). Its API and every proxy listen on 127.0.0.1 only. TLS passes through untouched:
the API server's certificate names 127.0.0.1, so a client that dials the proxy's port
verifies it as before.

The faults the fault tests use, as Toxiproxy names them (attributes in milliseconds, KB/s):
- `latency` (latency, jitter): every chunk is held back;
- `reset_peer` (timeout): the connection ends with an RST after `timeout` ms;
- `timeout` with timeout=0: a black hole, bytes vanish and nothing closes. Removing it
  closes the connections it held (Toxiproxy's own clean-up), as a healed partition would;
- `bandwidth` (rate, KB/s); `slicer` (average_size, size_variation, delay in us).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, Server, built_by, wait_until

BUILD_SCRIPT = Path(__file__).resolve().parent / "build_toxiproxy.sh"


def find_toxiproxy() -> Path:
    """$SPARKK8S_TOXIPROXY_BIN, or what build_toxiproxy.sh builds (or finds) under ~/.cache."""
    path = built_by(BUILD_SCRIPT, "SPARKK8S_TOXIPROXY_BIN")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"toxiproxy-server is not an executable at {path}")
    return path


class ToxiproxyError(RuntimeError):
    pass


class _Api:
    """Toxiproxy's JSON API on loopback (plain HTTP, standard library)."""

    def __init__(self, port: int):
        self.port = port

    def call(self, method: str, path: str, body: Any = None) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"Content-Type": "application/json"} if payload is not None else {}
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        if response.status >= 300:
            raise ToxiproxyError(f"{method} {path} -> HTTP {response.status}: {data[:300]!r}")
        return json.loads(data) if data else None


@dataclass
class Proxy:
    """One named proxy: `listen` is the address clients dial instead of the upstream."""

    api: _Api
    name: str
    listen: str
    upstream: str

    @property
    def url(self) -> str:
        return f"https://{self.listen}"

    def add_toxic(
        self,
        type_: str,
        name: str | None = None,
        stream: str = "downstream",
        toxicity: float = 1.0,
        **attributes: Any,
    ) -> str:
        """`toxicity`: the share of connections the toxic applies to (drawn per connection)."""
        name = name or f"{type_}_{stream}"
        body = {"name": name, "type": type_, "stream": stream, "toxicity": toxicity}
        body["attributes"] = attributes
        self.api.call("POST", f"/proxies/{self.name}/toxics", body)
        return name

    def remove_toxic(self, name: str) -> None:
        self.api.call("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def toxics(self) -> list[dict[str, Any]]:
        return list(self.api.call("GET", f"/proxies/{self.name}/toxics") or [])

    @contextlib.contextmanager
    def toxic(
        self, type_: str, streams: tuple[str, ...] = ("downstream",), **attributes: Any
    ) -> Iterator[None]:
        """The toxic on each of `streams` while the block runs (removed even on error)."""
        names = []
        try:
            for stream in streams:
                names.append(self.add_toxic(type_, stream=stream, **attributes))
            yield
        finally:
            for name in names:
                with contextlib.suppress(ToxiproxyError):
                    self.remove_toxic(name)

    def set_enabled(self, enabled: bool) -> None:
        """A disabled proxy refuses new connections and closes the open ones."""
        self.api.call("POST", f"/proxies/{self.name}", {"enabled": enabled})

    def clear(self) -> None:
        for toxic in self.toxics():
            self.remove_toxic(toxic["name"])
        self.set_enabled(True)


class Toxiproxy(Server):
    """toxiproxy-server on a free loopback port; stopped by its pid."""

    def __init__(self, workdir: Path | None = None, binary: Path | None = None):
        self.binary = binary or find_toxiproxy()
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="sparkk8s-toxiproxy-"))
        self.api = _Api(free_port())
        self._process = ManagedProcess(
            "toxiproxy",
            [str(self.binary), "-host", "127.0.0.1", "-port", str(self.api.port)],
            self.workdir / "toxiproxy.log",
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def start(self) -> Self:
        self._process.start()
        wait_until(
            lambda: self.api.call("GET", "/version") is not None,
            30,
            "toxiproxy API",
            watch=[self._process],
        )
        return self

    def stop(self) -> None:
        self._process.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def proxy(self, name: str, upstream: str) -> Proxy:
        """A new proxy from a free loopback port to `upstream` (host:port)."""
        listen = f"127.0.0.1:{free_port()}"
        body = {"name": name, "listen": listen, "upstream": upstream, "enabled": True}
        created = self.api.call("POST", "/proxies", body)
        return Proxy(self.api, name, created.get("listen", listen), upstream)

    def delete(self, proxy: Proxy) -> None:
        self.api.call("DELETE", f"/proxies/{proxy.name}")
