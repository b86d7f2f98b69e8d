"""Loopback ports for the servers the tests start: free, and outside the ephemeral range.

`bind(("127.0.0.1", 0))` gets a port from the kernel's ephemeral range
(`ip_local_port_range`), the range every outgoing connection takes its source port from.
Between that pick and the server's own bind (a second or more for kube-apiserver, which
first writes its certificates), one of the many connections the two lanes open can take the
port: run 20 of `.ci/run` lost the compatibility suite's control plane to "bind: address
already in use". A port below that range is never a source port. It is picked at random,
so two pickers running side by side rarely meet, and checked free by binding it.
"""

from __future__ import annotations

import random
import socket

LOWEST = 20000  # above the fixed ports of what a node runs (the kubelet's 10250, ...)
RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 by default)."""
    try:
        with open(RANGE_FILE, encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(kind: socket.SocketKind = socket.SOCK_STREAM) -> int:
    """A loopback port nothing holds now and no outgoing connection will take."""
    highest = max(ephemeral_start(), LOWEST + 1000)
    for _ in range(200):
        port = random.randrange(LOWEST, highest)
        with socket.socket(socket.AF_INET, kind) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free loopback port in {LOWEST}-{highest - 1} after 200 tries")
