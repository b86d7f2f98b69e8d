"""The three watch layers, sync and async, against a scripted collection.

Every scenario runs on both faces (`watch_sync`, `watch_async`): they must behave the same.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError
from airflow_provider_sparkk8s.kube import listwatch, watch_async, watch_sync
from airflow_provider_sparkk8s.kube.listwatch import (
    STREAM_ENDED,
    Listed,
    WatchCursor,
    WatchSpec,
    WatchStats,
)
from tests.kube.fake_watch import (
    AsyncCollection,
    ScriptedCollection,
    Stream,
    SyncCollection,
    event,
    gone_event,
    pod,
)

SPEC = WatchSpec(
    "/api/v1/namespaces/ns/pods",
    {"labelSelector": "spark-role"},
    timeout_seconds=30,
    backoff_base=0.001,
    backoff_max=0.002,
)
FACES = ["sync", "async"]


def listing(version: int, *items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": str(version)}, "items": list(items)}


def make(face: str, lists: list[dict[str, Any]], streams: list[Stream]) -> ScriptedCollection:
    return (SyncCollection if face == "sync" else AsyncCollection)(lists, streams)


def take(
    face: str,
    collection: ScriptedCollection,
    count: int,
    spec: WatchSpec = SPEC,
    stats: WatchStats | None = None,
    cursor: WatchCursor | None = None,
) -> list[Any]:
    """The first `count` items `watch_forever` yields; then the loop is left."""
    if face == "sync":
        items = watch_sync.watch_forever(collection, spec, stats, cursor)  # type: ignore[arg-type]
        taken = list(itertools.islice(items, count))
        items.close()
        return taken

    async def run() -> list[Any]:
        taken: list[Any] = []
        items = watch_async.watch_forever(collection, spec, stats, cursor)  # type: ignore[arg-type]
        async for item in items:
            taken.append(item)
            if len(taken) == count:
                break
        await items.aclose()
        return taken

    return asyncio.run(run())


def kind(item: Any) -> str:
    if isinstance(item, Listed):
        return f"listed@{item.resource_version}"
    return "ended" if item is STREAM_ENDED else str(item["type"])


def kinds(items: list[Any]) -> list[str]:
    return [kind(item) for item in items]


@pytest.mark.parametrize("face", FACES)
def test_lists_then_watches_from_the_lists_version(face: str) -> None:
    collection = make(
        face,
        [listing(10, pod("a", 9))],
        [Stream([event("ADDED", "b", 11), event("MODIFIED", "a", 12)])],
    )
    items = take(face, collection, 3)
    assert kinds(items) == ["listed@10", "ADDED", "MODIFIED"]
    assert items[0].items == (pod("a", 9),)
    assert collection.list_params == [{"labelSelector": "spark-role"}]
    params = collection.watch_params[0]
    assert params["resourceVersion"] == "10" and params["labelSelector"] == "spark-role"
    assert params["allowWatchBookmarks"] == "true"
    assert 24 <= int(params["timeoutSeconds"]) <= 30
    assert collection.read_timeouts == [None]
    assert collection.closed == 1  # leaving the loop closed the open stream


@pytest.mark.parametrize("face", FACES)
def test_a_stream_that_ends_resumes_from_the_last_version_without_listing(face: str) -> None:
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}
    collection = make(
        face,
        [listing(10)],
        [Stream([event("ADDED", "b", 11), bookmark]), Stream([event("MODIFIED", "b", 16)])],
    )
    stats = WatchStats()
    items = take(face, collection, 5, stats=stats)
    assert kinds(items) == ["listed@10", "ADDED", "BOOKMARK", "ended", "MODIFIED"]
    assert [p["resourceVersion"] for p in collection.watch_params] == ["10", "15"]
    assert (stats.lists, stats.streams, stats.events, stats.gone) == (1, 2, 3, 0)


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("how", ["error event", "error answer"])
def test_410_gone_relists_and_watches_from_the_new_list(face: str, how: str) -> None:
    gone = (
        Stream([gone_event()])
        if how == "error event"
        else Stream(error=KubeApiError(410, "Expired", "too old", method="GET", path="/x"))
    )
    collection = make(
        face, [listing(10), listing(20, pod("c", 19))], [gone, Stream([event("ADDED", "d", 21)])]
    )
    stats = WatchStats()
    items = take(face, collection, 3, stats=stats)
    assert kinds(items) == ["listed@10", "listed@20", "ADDED"]
    assert [p["resourceVersion"] for p in collection.watch_params] == ["10", "20"]
    assert (stats.gone, stats.lists, stats.reconnects) == (1, 2, 0)


@pytest.mark.parametrize("face", FACES)
def test_failures_back_off_and_resume_from_the_cursor_without_listing(face: str) -> None:
    refused = KubeConnectionError("cannot reach the API server (scripted)")
    other_error = {"type": "ERROR", "object": {"code": 500, "reason": "InternalError"}}
    collection = make(
        face,
        [listing(10)],
        [
            Stream([event("ADDED", "a", 11)], error=refused),  # the connection breaks
            Stream([]),  # closed at once, nothing delivered
            Stream([other_error]),  # an ERROR that is not 410
            Stream([event("MODIFIED", "a", 12)]),
        ],
    )
    stats = WatchStats()
    items = take(face, collection, 3, stats=stats)
    assert kinds(items) == ["listed@10", "ADDED", "MODIFIED"]
    assert [p["resourceVersion"] for p in collection.watch_params] == ["10", "11", "11", "11"]
    assert (stats.reconnects, stats.lists, stats.gone) == (3, 1, 0)


@pytest.mark.parametrize("face", FACES)
def test_the_backoff_restarts_after_a_stream_the_server_ended_on_its_own(
    face: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = KubeConnectionError("cannot reach the API server (scripted)")
    counted: list[int] = []

    def note(spec: WatchSpec, failures: int, stats: WatchStats, error: Exception) -> float:
        counted.append(failures)
        return 0.0

    monkeypatch.setattr(listwatch, "note_failure", note)  # both faces' `Reconnects`
    collection = make(
        face,
        [listing(10)],
        [
            Stream(error=refused),
            Stream(error=refused),
            Stream([event("MODIFIED", "a", 11)]),  # healthy until the server's timeout
            Stream(error=refused),
            Stream([event("MODIFIED", "a", 12)], error=refused),  # broke mid-way: not healthy
            Stream(error=refused),
            Stream([event("MODIFIED", "a", 13)]),
        ],
    )
    items = take(face, collection, 5)
    assert kinds(items)[-1] == "MODIFIED"
    assert counted == [1, 2, 1, 2, 3]


@pytest.mark.parametrize("face", FACES)
def test_a_given_cursor_resumes_without_listing_and_read_timeout_reaches_the_sender(
    face: str,
) -> None:
    collection = make(face, [listing(99)], [Stream([event("ADDED", "a", 51)])])
    spec = WatchSpec(SPEC.path, SPEC.selector, read_timeout=7.5)
    cursor = WatchCursor("50")
    items = take(face, collection, 1, spec=spec, cursor=cursor)
    assert kinds(items) == ["ADDED"]
    assert collection.list_params == []
    assert collection.watch_params[0]["resourceVersion"] == "50"
    assert collection.read_timeouts == [7.5]
    assert cursor.resource_version == "51"


@pytest.mark.parametrize("face", FACES)
def test_layer_2_hands_failures_to_its_caller_and_returns_on_gone(face: str) -> None:
    """The driver-pods service's way: no reconnects, its own cursor, a relist after 410."""
    refused = KubeConnectionError("cannot reach the API server (scripted)")
    collection = make(
        face,
        [listing(10)],
        [Stream([event("ADDED", "a", 11)]), Stream([gone_event()]), Stream(error=refused)],
    )
    cursor, stats = WatchCursor(), WatchStats()
    spec = SPEC

    def run_sync() -> list[Any]:
        return list(watch_sync.list_then_watch(collection, spec, cursor, stats))  # type: ignore[arg-type]

    async def run_async() -> list[Any]:
        items = watch_async.list_then_watch(collection, spec, cursor, stats)  # type: ignore[arg-type]
        return [item async for item in items]

    def run() -> list[Any]:
        return run_sync() if face == "sync" else asyncio.run(run_async())

    assert kinds(run()) == ["listed@10", "ADDED", "ended"]
    assert cursor.resource_version is None and stats.gone == 1  # the next round lists
    with pytest.raises(KubeConnectionError):
        run()
