"""Following a collection from asyncio (the snapshot store): kopf's three watch layers.

`watch_forever` yields a `Listed` after every (re)list, the raw watch events in between and
`STREAM_ENDED` when a stream ends on its own, for as long as it is iterated; cancelling the
task that iterates it closes the stream. The rules each layer applies are `listwatch`'s,
shared with `watch_sync`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any, Protocol

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.decoding import ItemView
from airflow_provider_sparkk8s.kube.listwatch import (
    STREAM_ENDED,
    Gone,
    Listed,
    StreamEnded,
    WatchCursor,
    WatchSpec,
    WatchStats,
    check_stream_end,
    checked_event,
    gone_or_same,
    note_failure,
    note_gone,
)

Item = Listed | StreamEnded | Mapping[str, Any]


class AsyncWatchClient(Protocol):
    """What the layers need of `AsyncKubeClient`."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        each_item: ItemView | None = None,
        accept: str | None = None,
    ) -> dict[str, Any]: ...

    def watch(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]: ...


async def list_objects(client: AsyncWatchClient, spec: WatchSpec, stats: WatchStats) -> Listed:
    """One full list of the collection (also the store's periodic resync)."""
    started = time.monotonic()
    body = await client.request("GET", spec.path, **spec.list_request())
    stats.lists += 1
    return Listed.from_body(body, started)


async def watch_forever(
    client: AsyncWatchClient,
    spec: WatchSpec,
    stats: WatchStats | None = None,
    cursor: WatchCursor | None = None,
) -> AsyncGenerator[Item, None]:
    """Layer 1: never give up. Any failure (the API down, a refused watch, a stream cut at
    once) is counted and waited out with capped, jittered backoff, then the next round
    resumes from the cursor; the backoff restarts after a round that ended in a relist, and
    after a stream the server ended on its own (the connection was healthy for a whole
    stream), so outages apart do not add up."""
    stats = stats or WatchStats()
    cursor = cursor or WatchCursor()
    failures = 0
    while True:
        try:
            async with aclosing(list_then_watch(client, spec, cursor, stats)) as items:
                async for item in items:
                    if item is STREAM_ENDED:
                        failures = 0
                    yield item
                    del item  # a list waiting here for the next event would stay whole
            failures = 0
        except Exception as error:  # noqa: BLE001 - a watcher outlives any failure
            failures += 1
            await asyncio.sleep(note_failure(spec, failures, stats, error))


async def list_then_watch(
    client: AsyncWatchClient, spec: WatchSpec, cursor: WatchCursor, stats: WatchStats
) -> AsyncGenerator[Item, None]:
    """Layer 2: list when there is nothing to resume from, then watch stream after stream
    from the last resourceVersion seen. Returns on `410 Gone`, so layer 1 lists again."""
    if cursor.resource_version is None:
        listed = await list_objects(client, spec, stats)
        cursor.resource_version = listed.resource_version
        yield listed
        # This frame lives as long as the streams that follow: holding the list here would
        # keep every listed object, whole, for hours (about 20 KiB per pod of a large list).
        del listed
    while True:
        opened, delivered = time.monotonic(), 0
        stats.streams += 1
        try:
            async with aclosing(watch_stream(client, spec, cursor.resource_version)) as events:
                async for event in events:
                    delivered += 1
                    stats.events += 1
                    cursor.advance(event)
                    yield event
        except Gone:
            note_gone(spec, cursor, stats)
            return
        check_stream_end(delivered, opened)
        yield STREAM_ENDED


async def watch_stream(
    client: AsyncWatchClient, spec: WatchSpec, since: str | None
) -> AsyncGenerator[Mapping[str, Any], None]:
    """Layer 3: one HTTP watch stream from `since`, until the server's timeout ends it.
    ERROR events become exceptions (`Gone` for 410); everything else is yielded as is."""
    try:
        async for event in client.watch(
            spec.path, spec.stream_params(since), read_timeout=spec.read_timeout
        ):
            yield checked_event(event, spec.path)
    except KubeApiError as error:
        raise gone_or_same(error) from None
