"""A scripted collection for the watch layers' unit tests, with a sync and an async face.

Each list answers the next body of `lists` (or the last one again); each watch plays the
next script of `streams`: events to yield, an exception to raise at the end, or both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stream:
    events: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None  # raised once the events are played


def pod(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


def event(kind: str, name: str, version: int) -> dict[str, Any]:
    return {"type": kind, "object": pod(name, version)}


def gone_event() -> dict[str, Any]:
    return {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}


class ScriptedCollection:
    def __init__(self, lists: list[dict[str, Any]], streams: list[Stream]) -> None:
        self.lists = lists
        self.streams = streams
        self.list_params: list[dict[str, Any]] = []
        self.watch_params: list[dict[str, Any]] = []
        self.read_timeouts: list[float | None] = []
        self.closed = 0  # streams that were closed, whether played out or abandoned

    def _list(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        self.list_params.append(dict(params or {}))
        return self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]

    def _script(self, params: Mapping[str, Any] | None, read_timeout: float | None) -> Stream:
        self.watch_params.append(dict(params or {}))
        self.read_timeouts.append(read_timeout)
        if not self.streams:
            raise AssertionError("the test ran out of scripted streams")
        return self.streams.pop(0)


class SyncCollection(ScriptedCollection):
    def request(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return self._list(params)

    def watch(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        script = self._script(params, read_timeout)
        try:
            yield from script.events
            if script.error is not None:
                raise script.error
        finally:
            self.closed += 1


class AsyncCollection(ScriptedCollection):
    async def request(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self._list(params)

    async def watch(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        script = self._script(params, read_timeout)
        try:
            for item in script.events:
                await asyncio.sleep(0)
                yield item
            if script.error is not None:
                raise script.error
        finally:
            self.closed += 1
