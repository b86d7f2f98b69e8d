"""Following a collection from a thread (the driver-pods service, the CLI): the same three
layers as `watch_async`, blocking.

`watch_forever` yields a `Listed` after every (re)list, the raw watch events in between and
`STREAM_ENDED` when a stream ends on its own; leaving the loop closes the stream. The rules
each layer applies are `listwatch`'s. No asyncio here: this is on sparkk8s-submit's import
path.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Mapping
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


class WatchClient(Protocol):
    """What the layers need of `KubeClient`."""

    def request(
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
    ) -> Iterator[dict[str, Any]]: ...


def list_objects(client: WatchClient, spec: WatchSpec, stats: WatchStats) -> Listed:
    """One full list of the collection."""
    started = time.monotonic()
    body = client.request("GET", spec.path, **spec.list_request())
    stats.lists += 1
    return Listed.from_body(body, started)


def watch_forever(
    client: WatchClient,
    spec: WatchSpec,
    stats: WatchStats | None = None,
    cursor: WatchCursor | None = None,
) -> Generator[Item, None, None]:
    """Layer 1: never give up; back off after a failure, resume from the cursor. The
    backoff restarts after a relist, and after a stream the server ended on its own (the
    connection was healthy for a whole stream), so outages apart do not add up."""
    stats = stats or WatchStats()
    cursor = cursor or WatchCursor()
    failures = 0
    while True:
        try:
            for item in list_then_watch(client, spec, cursor, stats):
                if item is STREAM_ENDED:
                    failures = 0
                yield item
            failures = 0
        except Exception as error:  # noqa: BLE001 - a watcher outlives any failure
            failures += 1
            time.sleep(note_failure(spec, failures, stats, error))


def list_then_watch(
    client: WatchClient, spec: WatchSpec, cursor: WatchCursor, stats: WatchStats
) -> Generator[Item, None, None]:
    """Layer 2: list when there is nothing to resume from, then stream after stream;
    returns on `410 Gone`, so layer 1 lists again."""
    if cursor.resource_version is None:
        listed = list_objects(client, spec, stats)
        cursor.resource_version = listed.resource_version
        yield listed
        # This frame lives as long as the streams that follow: holding the list here would
        # keep every listed object, whole, for hours (about 20 KiB per pod of a large list).
        del listed
    while True:
        opened, delivered = time.monotonic(), 0
        stats.streams += 1
        try:
            for event in watch_stream(client, spec, cursor.resource_version):
                delivered += 1
                stats.events += 1
                cursor.advance(event)
                yield event
        except Gone:
            note_gone(spec, cursor, stats)
            return
        check_stream_end(delivered, opened)
        yield STREAM_ENDED


def watch_stream(
    client: WatchClient, spec: WatchSpec, since: str | None
) -> Generator[Mapping[str, Any], None, None]:
    """Layer 3: one HTTP watch stream from `since`; ERROR events become exceptions."""
    try:
        for event in client.watch(
            spec.path, spec.stream_params(since), read_timeout=spec.read_timeout
        ):
            yield checked_event(event, spec.path)
    except KubeApiError as error:
        raise gone_or_same(error) from None
