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
from typing import Any

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube import listwatch
from airflow_provider_sparkk8s.kube.listwatch import Listed, WatchCursor, WatchSpec, WatchStats

Item = Listed | listwatch.StreamEnded | Mapping[str, Any]
# What the layers need of `KubeClient`.
WatchClient = listwatch.ListWatchClient[dict[str, Any], Iterator[dict[str, Any]]]


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
    """Layer 1: never give up; back off after a failure (`Reconnects`), resume from the
    cursor."""
    stats = stats or WatchStats()
    cursor = cursor or WatchCursor()
    reconnects = listwatch.Reconnects(spec, stats)
    while True:
        try:
            for item in list_then_watch(client, spec, cursor, stats):
                reconnects.passing(item)
                yield item
            reconnects.round_ended()
        except Exception as error:  # noqa: BLE001 - a watcher outlives any failure
            time.sleep(reconnects.failed(error))


def list_then_watch(
    client: WatchClient, spec: WatchSpec, cursor: WatchCursor, stats: WatchStats
) -> Generator[Item, None, None]:
    """Layer 2: list when there is nothing to resume from, then stream after stream;
    returns on `410 Gone`, so layer 1 lists again."""
    if cursor.resource_version is None:
        # Yielded, not kept: this frame lives as long as the streams that follow, and a
        # list held here would stay whole for hours (about 20 KiB per pod of a large list).
        yield listwatch.listed_into(cursor, list_objects(client, spec, stats))
    while True:
        stream = listwatch.StreamRound(spec, cursor, stats)
        try:
            for event in watch_stream(client, spec, cursor.resource_version):
                yield stream.saw(event)
        except listwatch.Gone:
            stream.gone()
            return
        yield stream.ended()


def watch_stream(
    client: WatchClient, spec: WatchSpec, since: str | None
) -> Generator[Mapping[str, Any], None, None]:
    """Layer 3: one HTTP watch stream from `since`; ERROR events become exceptions."""
    try:
        for event in client.watch(
            spec.path, spec.stream_params(since), read_timeout=spec.read_timeout
        ):
            yield listwatch.checked_event(event, spec.path)
    except KubeApiError as error:
        raise listwatch.gone_or_same(error) from None
