"""A real HTTP proxy (tinyproxy, from Debian's tinyproxy-bin) on loopback for the proxy tests.

`testenv/install_tinyproxy.sh` unpacks it into ~/.cache. Its log records every CONNECT and
forwarded request, which is how a test proves a request went through it (or did not).

client-go never sends a request for a loopback address or `localhost` through a proxy from
the environment, and our API server listens on 127.0.0.1. So the proxy runs in its own mount
namespace with a private /etc/hosts that resolves `PROXIED_HOST` to 127.0.0.1: a client
asked for https://kube-apiserver.proxied.test:<port> must go through the proxy, because
only the proxy can resolve that name (the name is checked with `tls_server_name`).
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from testenv.ports import free_port

PROXIED_HOST = "kube-apiserver.proxied.test"  # resolved by the proxy only


@dataclass
class TinyProxy:
    binary: str
    workdir: Path
    basic_auth: tuple[str, str] | None = None
    port: int = 0
    _process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The proxy's URL, with its credentials when it asks for some."""
        auth = f"{self.basic_auth[0]}:{self.basic_auth[1]}@" if self.basic_auth else ""
        return f"http://{auth}127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "tinyproxy.log"

    def start(self) -> TinyProxy:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        hosts = self.workdir / "hosts"
        hosts.write_text(f"127.0.0.1 localhost\n127.0.0.1 {PROXIED_HOST}\n")
        lines = [
            f"Port {self.port}",
            "Listen 127.0.0.1",
            "Timeout 120",
            "MaxClients 64",
            "LogLevel Connect",
            f'LogFile "{self.log_file}"',
            f'PidFile "{self.workdir / "tinyproxy.pid"}"',
            "Allow 127.0.0.1",
            "DisableViaHeader Yes",
        ]
        if self.basic_auth:
            lines.append(f"BasicAuth {self.basic_auth[0]} {self.basic_auth[1]}")
        config = self.workdir / "tinyproxy.conf"
        config.write_text("\n".join(lines) + "\n")
        in_own_namespace = (
            'mount --bind "$1" /etc/hosts && exec "$2" -d -c "$3"'  # the mount dies with it
        )
        namespace_args = [str(hosts), self.binary, str(config)]
        self._process = subprocess.Popen(
            ["unshare", "--mount", "sh", "-c", in_own_namespace, "sh", *namespace_args],
            stdout=subprocess.DEVNULL,
            stderr=(self.workdir / "stderr.log").open("wb"),
        )
        deadline = time.monotonic() + 15
        while not _accepts(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                stderr = (self.workdir / "stderr.log").read_text()[-2000:]
                raise RuntimeError(f"tinyproxy did not start: {stderr}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
        self._process = None

    def log_text(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def requests(self) -> list[str]:
        """Every request line the proxy received (CONNECT and forwarded ones), in order."""
        return re.findall(r"Request \(file descriptor \d+\): (.+)", self.log_text())


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
