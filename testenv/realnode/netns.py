"""Entering a network namespace from Python (3.11 has no os.setns): sockets belong to the
namespace their creating thread is in when they are made, and keep it afterwards."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


@contextlib.contextmanager
def inside(netns_path: str) -> Iterator[None]:
    """The calling thread in `netns_path` for the block, then back in its own."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(netns_path, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def socket_in(netns_path: str | None) -> socket.socket:
    """A non-blocking TCP socket of `netns_path` (None: this thread's own namespace)."""
    if netns_path is None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    else:
        with inside(netns_path):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    return sock
