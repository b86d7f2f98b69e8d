"""The event-loop watch layers' own rules (the scenarios both faces share are in
test_watch_layers.py): cancelling the task that iterates closes the HTTP stream, and layer 2
resumes from the version it was given without listing."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from airflow_provider_sparkk8s.kube import watch_async
from airflow_provider_sparkk8s.kube.listwatch import (
    STREAM_ENDED,
    WatchCursor,
    WatchSpec,
    WatchStats,
)
from tests.kube.fake_watch import AsyncCollection, Stream, event

SPEC = WatchSpec("/api/v1/namespaces/ns/pods", {"labelSelector": "spark-role"}, timeout_seconds=30)


async def test_cancelling_the_task_that_iterates_closes_the_stream() -> None:
    endless = Stream(
        [event("ADDED", "a", 8)] + [event("MODIFIED", "a", v) for v in range(9, 10_000)]
    )
    collection = AsyncCollection([], [endless])
    seen: list[Any] = []
    first_seen = asyncio.Event()

    async def follow() -> None:
        async for item in watch_async.watch_forever(collection, SPEC, cursor=WatchCursor("7")):  # type: ignore[arg-type]
            seen.append(item)
            first_seen.set()

    task = asyncio.create_task(follow())
    await first_seen.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert seen[0] == event("ADDED", "a", 8) and len(seen) < 9_991
    assert collection.closed == 1


async def test_a_given_version_is_watched_from_without_a_list() -> None:
    collection = AsyncCollection([], [Stream([event("ADDED", "a", 8)])])
    stats = WatchStats()
    cursor = WatchCursor("7")
    layer_2 = watch_async.list_then_watch(collection, SPEC, cursor, stats)  # type: ignore[arg-type]
    taken = [await anext(layer_2), await anext(layer_2)]
    await layer_2.aclose()
    assert taken == [event("ADDED", "a", 8), STREAM_ENDED]
    assert stats.lists == 0 and cursor.resource_version == "8"
