"""Waiting on a condition with a deadline; never a fixed sleep. `wait_for` blocks the
thread, `until` awaits in an event loop (so the tasks it waits on keep running); both
return the probe's first truthy value and fail naming what was awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _timed_out(timeout: float, message: str, last: object) -> AssertionError:
    return AssertionError(f"timed out after {timeout}s waiting for {message}; last: {last!r}")


def wait_for(
    probe: Callable[[], T | None],
    timeout: float = 30.0,
    message: str = "condition",
    interval: float = 0.05,
) -> T:
    """Calls `probe` until it returns something truthy and returns that value.
    Raises AssertionError naming `message` (and the last value seen) at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, message, last)
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)


async def until(
    probe: Callable[[], T | None],
    timeout: float = 5.0,
    message: str = "condition",
    interval: float = 0.005,
) -> T:
    """`wait_for` in an event loop. It starts polling sooner and stays quicker (at most
    every 50 ms): what it awaits is mostly another task of the same loop, one step away."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, message, last)
        await asyncio.sleep(interval)
        interval = min(interval * 1.5, 0.05)
