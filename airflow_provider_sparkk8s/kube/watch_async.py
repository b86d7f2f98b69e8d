"""Following a collection from asyncio (the snapshot store): kopf's three watch layers.

`watch_forever` yields a `Listed` after every (re)list, the raw watch events in between and
`STREAM_ENDED` when a stream ends on its own, for as long as it is iterated; cancelling the
task that iterates it closes the stream. The rules each layer applies are `listwatch`'s,
shared with `watch_sync`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping
from contextlib import aclosing
from typing import Any

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube import listwatch
from airflow_provider_sparkk8s.kube.listwatch import Listed, WatchCursor, WatchSpec, WatchStats

Item = Listed | listwatch.StreamEnded | Mapping[str, Any]
# What the layers need of `AsyncKubeClient`.
AsyncWatchClient = listwatch.ListWatchClient[
    Awaitable[dict[str, Any]], AsyncIterator[dict[str, Any]]
]


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
    once) is counted and waited out with capped, jittered backoff (`Reconnects`), then the
    next round resumes from the cursor."""
    stats = stats or WatchStats()
    cursor = cursor or WatchCursor()
    reconnects = listwatch.Reconnects(spec, stats)
    while True:
        try:
            async with aclosing(list_then_watch(client, spec, cursor, stats)) as items:
                async for item in items:
                    reconnects.passing(item)
                    yield item
                    del item  # a list waiting here for the next event would stay whole
            reconnects.round_ended()
        except Exception as error:  # noqa: BLE001 - a watcher outlives any failure
            await asyncio.sleep(reconnects.failed(error))


async def list_then_watch(
    client: AsyncWatchClient, spec: WatchSpec, cursor: WatchCursor, stats: WatchStats
) -> AsyncGenerator[Item, None]:
    """Layer 2: list when there is nothing to resume from, then watch stream after stream
    from the last resourceVersion seen. Returns on `410 Gone`, so layer 1 lists again."""
    if cursor.resource_version is None:
        # Yielded, not kept: this frame lives as long as the streams that follow, and a
        # list held here would stay whole for hours (about 20 KiB per pod of a large list).
        yield listwatch.listed_into(cursor, await list_objects(client, spec, stats))
    while True:
        stream = listwatch.StreamRound(spec, cursor, stats)
        try:
            async with aclosing(watch_stream(client, spec, cursor.resource_version)) as events:
                async for event in events:
                    yield stream.saw(event)
        except listwatch.Gone:
            stream.gone()
            return
        yield stream.ended()


async def watch_stream(
    client: AsyncWatchClient, spec: WatchSpec, since: str | None
) -> AsyncGenerator[Mapping[str, Any], None]:
    """Layer 3: one HTTP watch stream from `since`, until the server's timeout ends it.
    ERROR events become exceptions (`Gone` for 410); everything else is yielded as is."""
    try:
        async for event in client.watch(
            spec.path, spec.stream_params(since), read_timeout=spec.read_timeout
        ):
            yield listwatch.checked_event(event, spec.path)
    except KubeApiError as error:
        raise listwatch.gone_or_same(error) from None
