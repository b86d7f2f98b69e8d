"""Waiting on a condition with a deadline; never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | None],
    timeout: float = 30.0,
    message: str = "condition",
    interval: float = 0.05,
) -> T:
    """Calls `probe` until it returns something truthy and returns that value.
    Raises AssertionError naming `message` (and the last value seen) at the deadline."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {message}; last: {last!r}"
            )
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)
