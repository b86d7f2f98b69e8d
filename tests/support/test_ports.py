"""The test servers' loopback ports are free and never in the kernel's ephemeral range."""

from __future__ import annotations

import socket

from testenv import ports


def test_a_port_is_free_and_below_the_ephemeral_range() -> None:
    start = ports.ephemeral_start()
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        port = ports.free_port(kind)
        assert ports.LOWEST <= port < max(start, ports.LOWEST + 1000)
        with socket.socket(socket.AF_INET, kind) as server:
            server.bind(("127.0.0.1", port))  # free: the server's own bind succeeds


def test_a_held_port_is_never_given(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as held, socket.socket() as released:
        held.bind(("127.0.0.1", 0))
        released.bind(("127.0.0.1", 0))
        taken, free = held.getsockname()[1], released.getsockname()[1]
        released.close()
        picks = iter([taken, taken, free])
        monkeypatch.setattr(ports.random, "randrange", lambda low, high: next(picks))
        assert ports.free_port() == free


def test_the_ephemeral_range_is_read_from_the_kernel(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("40000\t60999\n")
    monkeypatch.setattr(ports, "RANGE_FILE", str(range_file))
    assert ports.ephemeral_start() == 40000
    monkeypatch.setattr(ports, "RANGE_FILE", str(tmp_path / "missing"))
    assert ports.ephemeral_start() == 32768
