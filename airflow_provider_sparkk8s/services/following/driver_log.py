"""Following the driver's log without repeating lines, by polling with `sinceTime`.

A followed log stream (`follow=true`) breaks with every reconnect and would have to be
replayed or lost; polling `pods/log?timestamps=true&sinceTime=...` every few seconds is
cheap, throttles itself, and survives API server restarts. The API server's `sinceTime`
has one-second precision, so each poll re-reads the current second: the cursor remembers
the last timestamp and the lines already seen at it, and drops those.

`take_new_lines` is pure; `DriverLogFollower` does the polling; `DriverLogStream` runs a
follower for the life of one application (while its driver runs, and once more at its end).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState
from airflow_provider_sparkk8s.records import record

log = logging.getLogger(__name__)

FINAL_LOG_WAIT = 5.0  # seconds the last lines may hold a final result back


@record
class LogCursor:
    """Where the last poll ended: the newest timestamp and the lines seen with it."""

    timestamp: str | None = None
    seen_at_timestamp: frozenset[str] = frozenset()

    def since_time(self) -> str | None:
        """The `sinceTime` query value: the cursor's second, as RFC 3339."""
        if self.timestamp is None:
            return None
        return self.timestamp.split(".")[0].rstrip("Z") + "Z"


def _sort_key(timestamp: str) -> tuple[str, int]:
    """RFC 3339 with nanoseconds, comparable (the API trims trailing zeros of the fraction)."""
    seconds, _, fraction = timestamp.rstrip("Z").partition(".")
    digits = "".join(c for c in fraction if c.isdigit())[:9]
    return seconds, int(digits.ljust(9, "0") or 0)


def take_new_lines(cursor: LogCursor, text: str) -> tuple[list[str], LogCursor]:
    """Lines of `text` (a `timestamps=true` log) the cursor has not seen, and the new cursor."""
    fresh: list[str] = []
    timestamp, seen = cursor.timestamp, set(cursor.seen_at_timestamp)
    for raw in text.splitlines():
        stamp, sep, line = raw.partition(" ")
        if not sep or not stamp[:1].isdigit():
            stamp, line = timestamp or "", raw  # a line without a timestamp: keep order, no key
        if timestamp is not None and stamp:
            order = (_sort_key(stamp) > _sort_key(timestamp)) - (
                _sort_key(stamp) < _sort_key(timestamp)
            )
            if order < 0 or (order == 0 and raw in seen):
                continue
            if order > 0:
                seen = set()
        if stamp:
            timestamp = stamp
        seen.add(raw)
        fresh.append(line)
    return fresh, LogCursor(timestamp, frozenset(seen))


FetchLog = Callable[[Mapping[str, Any]], Awaitable[str]]


class DriverLogFollower:
    """Polls the driver's log and hands new lines to `emit`, at most one poll per interval."""

    def __init__(
        self,
        fetch: FetchLog,
        emit: Callable[[str], None],
        container: str,
        since: str | None = None,
        max_lines_per_poll: int = 2000,
    ):
        self.fetch = fetch
        self.emit = emit
        self.container = container
        self.cursor = LogCursor(since) if since else LogCursor()
        self.max_lines_per_poll = max_lines_per_poll

    async def poll(self) -> int:
        """One poll; returns how many lines were emitted. API errors are logged, not raised."""
        params: dict[str, Any] = {"container": self.container, "timestamps": "true"}
        since = self.cursor.since_time()
        if since:
            params["sinceTime"] = since
        try:
            text = await self.fetch(params)
        except (KubeApiError, OSError) as error:
            log.debug("driver log not available yet: %s", error)
            return 0
        except Exception as error:  # noqa: BLE001 - the connection layer's errors: try again next time
            log.debug("driver log poll failed: %s", error)
            return 0
        lines, self.cursor = take_new_lines(self.cursor, text)
        shown = lines[: self.max_lines_per_poll]
        for line in shown:
            self.emit(line)
        if len(lines) > len(shown):
            self.emit(f"... {len(lines) - len(shown)} more driver log lines not shown")
        return len(shown)

    async def run(self, interval: float) -> None:
        while True:
            await self.poll()
            await asyncio.sleep(interval)


class DriverLogStream:
    """One application's driver log: polled from when the driver runs, read once more when
    the application ends, so the last lines come before its result (but never hold the
    result back longer than `final_wait`).

    :param follower_for: a log follower for the driver pod of that name.
    """

    def __init__(
        self,
        follower_for: Callable[[str], DriverLogFollower],
        interval: float,
        final_wait: float = FINAL_LOG_WAIT,
    ):
        self._follower_for = follower_for
        self._interval = interval
        self._final_wait = final_wait
        self._follower: DriverLogFollower | None = None
        self._task: asyncio.Task[None] | None = None

    def saw(self, state: ApplicationState) -> None:
        """Start polling once the driver runs."""
        if self._follower is None and state.state == "running" and state.driver_pod:
            self._follower = self._follower_for(state.driver_pod)
            self._task = asyncio.create_task(self._follower.run(self._interval))

    async def finish(self, state: ApplicationState) -> None:
        """The application ended in `state`: stop polling and read the last lines."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if not state.driver_pod or state.state == "unknown":
            return  # no driver left to read
        self._follower = self._follower or self._follower_for(state.driver_pod)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._final_wait):
                await self._follower.poll()

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
