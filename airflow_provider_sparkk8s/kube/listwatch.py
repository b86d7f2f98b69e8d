"""List-then-watch as plain data and rules, shared by the sync and the async watch layers.

`watch_sync` and `watch_async` follow a collection in the same three layers (kopf's): an
endless loop that reconnects, a list-then-watch that returns on `410 Gone` so the loop
relists, and one HTTP stream. Everything those layers decide is written once, here, without
I/O: the query of a stream, what an ERROR event means, where to resume, when a stream that
ended is a failure. What they hand their consumer is plain too: a `Listed` after every
(re)list, raw watch events in between, and `STREAM_ENDED` whenever a stream ends on its own.
A consumer that wants failures rather than reconnects iterates layer 2, `list_then_watch`,
with its own `WatchCursor`, and starts it again after it returns (a 410 relists).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Unpack

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.request import ItemView

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.kube.request import RequestFields
from airflow_provider_sparkk8s.kube.retries import backoff_delay
from airflow_provider_sparkk8s.objects import resource_version
from airflow_provider_sparkk8s.records import record

log = logging.getLogger(__name__)

# A stream that ends this soon after it opened without delivering anything is a failure
# (the server or a proxy cut it at once), so the next one waits for a backoff.
IMMEDIATE_CLOSE_SECONDS = 1.0


_Listing = TypeVar("_Listing", covariant=True)
_Events = TypeVar("_Events", covariant=True)


class ListWatchClient(Protocol[_Listing, _Events]):
    """What the watch layers need of a sender: a list and a watch stream. The sync layers
    take a `KubeClient` (a dict, an iterator), the async ones an `AsyncKubeClient` (an
    awaitable dict, an async iterator)."""

    def request(self, method: str, path: str, **fields: Unpack[RequestFields]) -> _Listing: ...

    def watch(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> _Events: ...


@record
class WatchSpec:
    """What to follow and how patiently."""

    path: str  # the collection, e.g. resource_path("v1", "Pod", namespace)
    selector: Mapping[str, str] = field(default_factory=dict)  # labelSelector / fieldSelector
    timeout_seconds: float = 300.0  # server-side; each stream asks for 80-100% of it
    backoff_base: float = 0.5  # seconds after the first failure; doubles per failure
    backoff_max: float = 30.0
    # Client-side bound on a silent stream; None lets the sender wait for the server's
    # timeout plus slack. A shorter one (with bookmarks) detects half-open connections.
    read_timeout: float | None = None
    # What the consumer keeps of each listed object, applied while the list is decoded (a
    # large list then never exists whole); None keeps the objects as they are.
    item_view: ItemView | None = None

    def list_params(self) -> dict[str, str]:
        return dict(self.selector)

    def list_request(self) -> dict[str, Any]:
        """The list request's keywords (`each_item` only when there is a view, so a client
        that knows nothing of views still serves the plain specs)."""
        params: dict[str, Any] = {"params": self.list_params()}
        if self.item_view is not None:
            params["each_item"] = self.item_view
        return params

    def stream_params(self, since: str | None) -> dict[str, Any]:
        """One stream's query: from resourceVersion `since`, bookmarks on, a jittered
        timeout so many watchers do not reconnect in step."""
        timeout = int(self.timeout_seconds * random.uniform(0.8, 1.0)) or 1
        return {
            **self.selector,
            "resourceVersion": since,
            "timeoutSeconds": str(timeout),
            "allowWatchBookmarks": "true",
        }

    def reconnect_delay(self, failures: int) -> float:
        return backoff_delay(failures, self.backoff_base, self.backoff_max)


@record
class Listed:
    """A full list: the consumer replaces what it knows of the collection with `items`."""

    items: tuple[Mapping[str, Any], ...]
    resource_version: str | None
    started: float  # time.monotonic() when the list was asked for

    @classmethod
    def from_body(cls, body: Mapping[str, Any], started: float) -> Listed:
        items = tuple(item for item in body.get("items") or () if isinstance(item, Mapping))
        return cls(items, resource_version(body), started)


@dataclass
class WatchStats:
    """Counters for logs, tests and benchmarks."""

    lists: int = 0
    streams: int = 0
    events: int = 0
    gone: int = 0
    reconnects: int = 0


@dataclass
class WatchCursor:
    """Where the next stream resumes; None means list first. Kept across reconnects, so a
    dropped connection resumes without a list and only `410 Gone` costs one."""

    resource_version: str | None = None

    def advance(self, event: Mapping[str, Any]) -> None:
        obj = event.get("object")
        if isinstance(obj, Mapping):
            version = resource_version(obj)
            if version is not None:
                self.resource_version = version


@record
class StreamEnded:
    """A stream ended on its own (the server's timeout) and the next one opens: nothing
    changed, but a consumer that waits with deadlines gets its turn to read its clock."""


STREAM_ENDED = StreamEnded()


class Gone(Exception):
    """The resourceVersion we resume from was compacted away: relist."""


def checked_event(event: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The event itself, or the error an ERROR event stands for (`Gone` for a 410)."""
    if event.get("type") != "ERROR":
        return event
    status = event.get("object") or {}
    if status.get("code") == 410:
        raise Gone(status.get("message"))
    raise KubeApiError(
        int(status.get("code") or 0),
        str(status.get("reason") or "WatchError"),
        str(status.get("message") or ""),
        method="WATCH",
        path=path,
    )


def gone_or_same(error: KubeApiError) -> Exception:
    """A 410 answer to the watch request itself means the same as a 410 ERROR event."""
    return Gone(error.api_message) if error.status == 410 else error


def check_stream_end(delivered: int, opened: float) -> None:
    """A stream that ended on its own is normal (the server's timeout); one that ended at
    once with nothing in it is treated as a failure, so the loop backs off."""
    if not delivered and time.monotonic() - opened < IMMEDIATE_CLOSE_SECONDS:
        raise ConnectionError("watch stream closed immediately")


def listed_into(cursor: WatchCursor, listed: Listed) -> Listed:
    """A list's answer, in layer 2: the next stream resumes from its resourceVersion."""
    cursor.resource_version = listed.resource_version
    return listed


class StreamRound:
    """One stream's bookkeeping in layer 2 (both watch modules): what it delivered, where
    the next one resumes, and whether its end was a failure (`check_stream_end`)."""

    def __init__(self, spec: WatchSpec, cursor: WatchCursor, stats: WatchStats) -> None:
        self.spec, self.cursor, self.stats = spec, cursor, stats
        self.opened, self.delivered = time.monotonic(), 0
        stats.streams += 1

    def saw(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        self.delivered += 1
        self.stats.events += 1
        self.cursor.advance(event)
        return event

    def gone(self) -> None:
        note_gone(self.spec, self.cursor, self.stats)

    def ended(self) -> StreamEnded:
        """The stream ended on its own: `STREAM_ENDED`, or the failure an empty one is."""
        check_stream_end(self.delivered, self.opened)
        return STREAM_ENDED


class Reconnects:
    """Layer 1's backoff (both watch modules): failures in a row, counted from zero again
    after a relist and after a stream the server ended on its own (the connection was
    healthy for a whole stream), so outages apart do not add up."""

    def __init__(self, spec: WatchSpec, stats: WatchStats) -> None:
        self.spec, self.stats, self.failures = spec, stats, 0

    def passing(self, item: object) -> None:
        if item is STREAM_ENDED:
            self.failures = 0

    def round_ended(self) -> None:
        self.failures = 0

    def failed(self, error: Exception) -> float:
        """Count a failed round; how long to wait before the next."""
        self.failures += 1
        return note_failure(self.spec, self.failures, self.stats, error)


def note_gone(spec: WatchSpec, cursor: WatchCursor, stats: WatchStats) -> None:
    stats.gone += 1
    cursor.resource_version = None
    log.info("watch on %s: resourceVersion too old (410 Gone); relisting", spec.path)


def note_failure(spec: WatchSpec, failures: int, stats: WatchStats, error: Exception) -> float:
    """Count a failed round and say how long to wait before the next."""
    stats.reconnects += 1
    delay = spec.reconnect_delay(failures)
    log.info("watch on %s interrupted (%s); reconnecting in %.1fs", spec.path, error, delay)
    return delay
