"""One watch plus a periodic list per (connection, namespace), shared by every trigger.

The triggerer runs all deferred tasks in one event loop, so one `SnapshotStore` can follow
every Spark pod of a namespace and hand each trigger its own application's pods. That is
Spark's `ExecutorPodsSnapshotsStore` one level up: a watch delivers changes at once, and a
full list every `resync_interval` repairs whatever the watch missed (a dropped or silently
dead connection, an API server restart). The merge rules live in `snapshot.py` (pure).

The watch is layered like kopf's:
- `_watch_forever`: the endless loop; reconnects with capped, jittered backoff;
- `_list_then_watch`: lists when it has no resourceVersion, then watches from it; returns
  on `410 Gone` so the next round relists;
- `_stream_once`: one HTTP watch stream with a server-side timeout, applying events.

Subscribers are keyed by application id (`spark-app-selector`). A subscriber is told the
application's pods when they change, and once right away if the store already knows them.
"Not there" is only ever told after a full list that started after the subscription, so a
trigger never mistakes a pod the watch has not delivered yet for a vanished driver.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.core import backoff_delay
from airflow_provider_sparkk8s.monitoring.reducer import Pod, application_id
from airflow_provider_sparkk8s.monitoring.snapshot import (
    Snapshot,
    apply_event,
    apply_list,
    pod_key,
    pods_by_application,
    resource_version,
    slim_pod,
)

log = logging.getLogger(__name__)

SPARK_PODS_SELECTOR = "spark-role in (driver,executor),spark-app-selector"
DEFAULT_RESYNC_INTERVAL = 30.0


class AsyncPodsClient(Protocol):
    """What the store needs of `AsyncKubeClient`."""

    async def request(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None
    ) -> dict: ...

    def watch(self, path: str, params: Mapping[str, Any] | None = None) -> AsyncIterator[dict]: ...

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class StoreSettings:
    resync_interval: float = DEFAULT_RESYNC_INTERVAL
    watch_timeout: float = 300.0  # server-side timeoutSeconds; each stream gets 80-100% of it
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    confirm_delay: float = 0.2  # new subscribers within this window share one confirming list
    label_selector: str = SPARK_PODS_SELECTOR


@dataclass
class StoreStats:
    """Counters for tests, logs and the benchmark."""

    lists: int = 0
    list_failures: int = 0
    streams: int = 0
    events: int = 0
    gone: int = 0
    reconnects: int = 0
    notifications: int = 0


class Gone(Exception):
    """The resourceVersion we resume from was compacted away: relist."""


class Subscription:
    """One application's pods, delivered as the latest value (older updates are dropped)."""

    def __init__(self, app_id: str, created: float):
        self.app_id = app_id
        self.created = created
        self.confirmed = False
        self._latest: tuple[Pod, ...] | None = None
        self._ready = asyncio.Event()

    def push(self, pods: tuple[Pod, ...]) -> None:
        self._latest = pods
        self._ready.set()

    async def next(self, timeout: float | None = None) -> tuple[Pod, ...] | None:
        """The application's pods once they changed, or None when `timeout` passed first."""
        try:
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        except TimeoutError:
            return None
        self._ready.clear()
        pods, self._latest = self._latest, None
        return pods


class SnapshotStore:
    def __init__(
        self, client: AsyncPodsClient, namespace: str, settings: StoreSettings | None = None
    ):
        self.client = client
        self.namespace = namespace
        self.settings = settings or StoreSettings()
        self.stats = StoreStats()
        self.snapshot = Snapshot()
        self._by_app: dict[str, tuple[Pod, ...]] = {}
        self._subscribers: dict[str, set[Subscription]] = {}
        self._watch_rv: str | None = None
        self._list_now = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._path = f"/api/v1/namespaces/{namespace}/pods"

    # -------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._watch_forever(), name=f"sparkk8s-watch-{self.namespace}"),
            asyncio.create_task(self._resync_forever(), name=f"sparkk8s-resync-{self.namespace}"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.client.aclose()

    @property
    def subscriber_count(self) -> int:
        return sum(len(subs) for subs in self._subscribers.values())

    # -------------------------------------------------------------- subscribers

    def subscribe(self, app_id: str) -> Subscription:
        subscription = Subscription(app_id, time.monotonic())
        self._subscribers.setdefault(app_id, set()).add(subscription)
        pods = self._by_app.get(app_id)
        if pods:
            subscription.confirmed = True
            subscription.push(pods)
        else:
            self._list_now.set()  # confirm absence (or find the pod) with a fresh list
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subs = self._subscribers.get(subscription.app_id)
        if subs is not None:
            subs.discard(subscription)
            if not subs:
                del self._subscribers[subscription.app_id]

    def _notify(self, apps: frozenset[str] | set[str]) -> None:
        for app in apps:
            for subscription in self._subscribers.get(app, ()):
                self.stats.notifications += 1
                subscription.confirmed = subscription.confirmed or bool(self._by_app.get(app))
                subscription.push(self._by_app.get(app, ()))

    def _apply(self, snapshot: Snapshot, changed: frozenset[str]) -> None:
        self.snapshot = snapshot
        if changed:
            grouped = pods_by_application(snapshot)
            for app in changed:
                if app in grouped:
                    self._by_app[app] = tuple(grouped[app])
                else:
                    self._by_app.pop(app, None)
            self._notify(changed)

    # -------------------------------------------------------------- the periodic list

    async def _full_list(self) -> str | None:
        started = time.monotonic()
        body = await self.client.request(
            "GET", self._path, params={"labelSelector": self.settings.label_selector}
        )
        self.stats.lists += 1
        items = [slim_pod(p) for p in body.get("items") or [] if isinstance(p, Mapping)]
        list_rv = resource_version(body)
        change = apply_list(self.snapshot, items, list_rv)
        self._apply(change.snapshot, change.changed_apps)
        self._confirm_subscribers_before(started)
        return list_rv

    def _confirm_subscribers_before(self, list_started: float) -> None:
        """Subscribers that joined before this list began now know their pods, even none."""
        for app, subs in self._subscribers.items():
            waiting = [s for s in subs if not s.confirmed and s.created <= list_started]
            for subscription in waiting:
                subscription.confirmed = True
                subscription.push(self._by_app.get(app, ()))

    def _has_unconfirmed(self) -> bool:
        return any(not s.confirmed for subs in self._subscribers.values() for s in subs)

    async def _resync_forever(self) -> None:
        """A full list every resync interval, and soon after new subscribers ask for one."""
        interval = self.settings.resync_interval
        next_resync = time.monotonic() + interval
        while True:
            remaining = next_resync - time.monotonic()
            if remaining > 0:
                try:
                    # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancel.
                    async with asyncio.timeout(remaining):
                        await self._list_now.wait()
                except TimeoutError:
                    pass
                else:
                    await asyncio.sleep(self.settings.confirm_delay)  # a burst shares one list
                    self._list_now.clear()
                    if not self._has_unconfirmed():
                        continue  # the watch layer's own list already answered them
            self._list_now.clear()
            next_resync = time.monotonic() + interval
            try:
                await self._full_list()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the watch, or the next round, will catch up
                self.stats.list_failures += 1
                log.warning("listing Spark pods in %s failed: %s", self.namespace, error)

    # -------------------------------------------------------------- the watch, in three layers

    async def _watch_forever(self) -> None:
        """Layer 1: never give up; back off after failures, reset after a healthy stream."""
        failures = 0
        while True:
            try:
                await self._list_then_watch()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - any failure: reconnect after a backoff
                failures += 1
                self.stats.reconnects += 1
                delay = backoff_delay(
                    failures, self.settings.backoff_base, self.settings.backoff_max
                )
                log.info(
                    "watch on %s interrupted (%s); reconnecting in %.1fs",
                    self.namespace,
                    error,
                    delay,
                )
                await asyncio.sleep(delay)

    async def _list_then_watch(self) -> None:
        """Layer 2: list if we have nothing to resume from, then watch stream after stream."""
        if self._watch_rv is None:
            self._watch_rv = await self._full_list()
        while True:
            started = time.monotonic()
            try:
                delivered = await self._stream_once()
            except Gone:
                self.stats.gone += 1
                log.info(
                    "watch on %s: resourceVersion too old (410 Gone); relisting", self.namespace
                )
                self._watch_rv = None
                return
            if not delivered and time.monotonic() - started < 1.0:
                # The server closed at once without a word: treat as a failure and back off.
                raise ConnectionError("watch stream closed immediately")

    async def _stream_once(self) -> int:
        """Layer 3: one watch stream from the last resourceVersion; returns events seen."""
        self.stats.streams += 1
        timeout = int(self.settings.watch_timeout * random.uniform(0.8, 1.0)) or 1
        params = {
            "labelSelector": self.settings.label_selector,
            "resourceVersion": self._watch_rv,
            "timeoutSeconds": str(timeout),
            "allowWatchBookmarks": "true",
        }
        delivered = 0
        try:
            async for event in self.client.watch(self._path, params):
                delivered += 1
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    if status.get("code") == 410:
                        raise Gone(status.get("message"))
                    raise KubeApiError(
                        int(status.get("code") or 0),
                        str(status.get("reason") or "WatchError"),
                        str(status.get("message") or ""),
                        method="WATCH",
                        path=self._path,
                    )
                self._on_event(event)
        except KubeApiError as error:
            if error.status == 410:
                raise Gone(error.api_message) from None
            raise
        return delivered

    def _on_event(self, event: Mapping[str, Any]) -> None:
        self.stats.events += 1
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return
        version = resource_version(obj)
        if version is not None:
            self._watch_rv = version
        if event.get("type") == "BOOKMARK":
            self.snapshot = apply_event(self.snapshot, event).snapshot
            return
        slim = slim_pod(obj)
        change = apply_event(self.snapshot, {"type": event.get("type"), "object": slim})
        self.snapshot = change.snapshot
        # One pod changed: patch its applications' tuples instead of regrouping every pod.
        key = pod_key(slim)
        current = change.snapshot.pods.get(key)
        for app in change.changed_apps:
            kept = [p for p in self._by_app.get(app, ()) if pod_key(p) != key]
            if current is not None and application_id(current) == app:
                kept.append(current)
            if kept:
                self._by_app[app] = tuple(kept)
            else:
                self._by_app.pop(app, None)
        self._notify(change.changed_apps)


# ------------------------------------------------------------------ the per-loop registry

ClientFactory = Callable[[], "AsyncPodsClient | Awaitable[AsyncPodsClient]"]


@dataclass
class _Entry:
    store: SnapshotStore | None = None
    users: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None  # why the client could not be built


_registry: dict[tuple[int, str, str], _Entry] = {}


@asynccontextmanager
async def shared_store(
    connection_id: str,
    namespace: str,
    client_factory: ClientFactory,
    settings: StoreSettings | None = None,
) -> AsyncIterator[SnapshotStore]:
    """The store for (connection, namespace) in this event loop: created by the first user,
    stopped when the last one leaves. The first user's settings are the store's settings."""
    key = (id(asyncio.get_running_loop()), connection_id, namespace)
    while True:
        entry = _registry.get(key)
        if entry is None:
            entry = _registry[key] = _Entry()
            try:
                client = client_factory()
                if inspect.isawaitable(client):
                    client = await client
                entry.store = SnapshotStore(client, namespace, settings)  # type: ignore[arg-type]
                entry.store.start()
            except Exception as error:
                entry.error = error
                raise
            finally:
                entry.ready.set()
                if entry.store is None:
                    del _registry[key]
            break
        await entry.ready.wait()
        if entry.store is not None:
            break
        if entry.error is not None:
            raise RuntimeError(
                f"the Kubernetes client for connection {connection_id!r} could not be built"
            ) from entry.error
        # Its builder was cancelled (its task was killed): build it for ourselves.
    store = entry.store
    assert store is not None
    entry.users += 1
    try:
        yield store
    finally:
        entry.users -= 1
        if entry.users == 0 and _registry.get(key) is entry:
            del _registry[key]
            await store.stop()


def active_stores() -> list[SnapshotStore]:
    """The stores of the running event loop (for tests and the benchmark)."""
    loop_id = id(asyncio.get_running_loop())
    return [e.store for k, e in _registry.items() if k[0] == loop_id and e.store is not None]
