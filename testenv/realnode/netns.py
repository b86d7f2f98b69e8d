"""Entering a network namespace from Python (3.11 has no os.setns): sockets belong to the
namespace their creating thread is in when they are made, and keep it afterwards; a thread
starts in its creator's."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar, cast

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")
REPO = str(Path(__file__).resolve().parents[2])


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


def call_inside(netns_path: str, function: Callable[..., T], *args: object, timeout: float) -> T:
    """`function(*args)` in a fresh interpreter whose only thread joined `netns_path` before
    anything opened a socket, so every thread it starts is there too; its result, or its
    exception with the child's traceback as a note, comes back. Not `inside()` in this
    process: gRPC dials from threads of its own, made wherever the process first used gRPC,
    so a client thread inside is not enough. `function` must be importable by name (a
    module-level function); the child has this process's `sys.path`. Run as `python -m`, so
    its `__main__` is a module (pyspark's Connect client refuses a bare one as a doctest)."""
    with tempfile.TemporaryDirectory(prefix="sparkk8s-inside-") as folder:
        request, result = Path(folder) / "request", Path(folder) / "result"
        # The path first: the child sets it before the function's module is imported.
        request.write_bytes(pickle.dumps(sys.path) + pickle.dumps((function, args)))
        argv = [
            sys.executable,
            "-m",
            "testenv.realnode.netns",
            netns_path,
            str(request),
            str(result),
        ]
        # This checkout's testenv, whatever the venv's install points at.
        paths = [REPO, *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        done = subprocess.run(argv, timeout=timeout, check=False, env=env)
        if not result.exists():
            raise RuntimeError(
                f"{function.__name__} in {netns_path}: exit {done.returncode}, no result"
            )
        ok, value, trace = pickle.loads(result.read_bytes())
    if not ok:
        value.add_note(f"in the node's network namespace:\n{trace}")
        raise value
    return cast(T, value)


def _main(argv: list[str]) -> int:
    netns_path, request, result = argv
    fd = os.open(netns_path, os.O_RDONLY)
    try:
        _setns(fd)  # first: nothing is imported yet that could have opened a socket
    finally:
        os.close(fd)
    with open(request, "rb") as called:
        sys.path[:] = pickle.load(called)
        function, args = pickle.load(called)
    try:
        outcome = (True, function(*args), "")
    except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
        outcome = (False, error, traceback.format_exc())
    try:
        data = pickle.dumps(outcome)
    except Exception:  # noqa: BLE001 - an exception that will not pickle goes back as text
        data = pickle.dumps((False, RuntimeError(repr(outcome[1])), outcome[2]))
    Path(result).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
