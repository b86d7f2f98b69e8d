"""The real node's two bridges between the host's loopback and the node's namespace, in one
process (one asyncio thread), so nothing needs a route out of either namespace:

- inward, for the kubelet and the pods: listeners inside the namespace (127.0.0.1:6443 for
  the kubelet's kubeconfig, the node IP's 6443 that the `kubernetes` Service's DNAT rule
  points at) forward to the API server on the host's loopback;
- outward, for the API server: an HTTP CONNECT proxy on a unix socket, which the API
  server's egress selector sends its `cluster` traffic through (pods/log, exec, the node,
  pod and service proxies); it connects inside the namespace to the node's and the pods'
  networks, and on the host's loopback to anything else there (a webhook server).

TLS passes through untouched both ways. The same module, with no proxy socket, forwards one
port of the node IP to a server on the host's loopback (an object store a test runs), so
pods reach it with nothing routed out (`RealNode.expose_host_port`).

    python -m testenv.realnode.forward CONFIG.json
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from testenv.realnode.netns import inside, socket_in

log = logging.getLogger("realnode-forward")


@dataclass(frozen=True)
class ForwardConfig:
    netns: str  # /proc/<holder>/ns/net
    listen: list[tuple[str, int]]  # inside the namespace
    upstream: tuple[str, int]  # on the host's loopback: the API server, or a test's server
    proxy_socket: str | None  # the API server's egress (HTTP CONNECT); None: inward only
    inside_networks: list[str]  # CONNECT targets reached inside the namespace

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> ForwardConfig:
        data = json.loads(text)
        data["listen"] = [tuple(address) for address in data["listen"]]
        data["upstream"] = tuple(data["upstream"])
        return cls(**data)


def connect_target(line: bytes) -> tuple[str, int]:
    """`CONNECT host:port HTTP/1.1` -> (host, port); ValueError for anything else."""
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        raise ValueError(f"not a CONNECT request line: {line[:100]!r}")
    host, _, port = parts[1].rpartition(":")
    return host.strip("[]"), int(port)


def where(host: str, inside_networks: list[str]) -> str:
    """'inside' (the node's namespace), 'host' (the host's loopback) or 'refused'."""
    address = ipaddress.ip_address(host)
    if any(address in ipaddress.ip_network(network, strict=False) for network in inside_networks):
        return "inside"
    return "host" if address.is_loopback else "refused"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()


async def _splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    b: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    await asyncio.gather(_pipe(a[0], b[1]), _pipe(b[0], a[1]))
    for writer in (a[1], b[1]):
        writer.close()


class Forward:
    def __init__(self, config: ForwardConfig) -> None:
        self.config = config

    async def _to_upstream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            upstream = await asyncio.open_connection(*self.config.upstream)
        except OSError as error:
            log.warning("upstream %s:%s: %s", *self.config.upstream, error)
            writer.close()
            return
        await _splice((reader, writer), upstream)

    async def _proxy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            host, port = connect_target(await reader.readline())
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # headers
            place = where(host, self.config.inside_networks)
            if place == "refused":
                raise PermissionError(f"{host} is neither in the node's networks nor loopback")
            sock = socket_in(self.config.netns if place == "inside" else None)
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)), 10)
            upstream = await asyncio.open_connection(sock=sock)
        except (OSError, ValueError, TimeoutError) as error:
            log.warning("CONNECT refused: %s", error)
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await _splice((reader, writer), upstream)

    async def run(self, stop: asyncio.Event) -> None:
        servers = []
        for address in self.config.listen:
            with inside(self.config.netns):
                sock = socket.create_server(address)
            sock.setblocking(False)
            servers.append(await asyncio.start_server(self._to_upstream, sock=sock))
        if self.config.proxy_socket is not None:
            servers.append(await asyncio.start_unix_server(self._proxy, self.config.proxy_socket))
        print("forwarding", flush=True)  # the node waits for this line in the log
        await stop.wait()
        for server in servers:
            server.close()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    config = ForwardConfig.from_json(Path(argv[0]).read_text())
    if config.proxy_socket is not None:
        Path(config.proxy_socket).unlink(missing_ok=True)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await Forward(config).run(stop)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
