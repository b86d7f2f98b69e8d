"""One watch plus a periodic list per (connection, namespace), shared by every trigger.

The triggerer runs all deferred tasks in one event loop, so one `SnapshotStore` can follow
every Spark pod of a namespace and hand each trigger its own application's pods. That is
Spark's `ExecutorPodsSnapshotsStore` one level up: a watch delivers changes at once, and a
resync every `resync_interval` repairs whatever the watch missed (a dropped or silently
dead connection, an API server restart). The resync lists versions only and fetches whole
just the pods that differ (`resync.py`): at 10,000 pods a whole list every 30 s was the one
cost per change that grew with the number of applications. The merge rules live in
`snapshot.py` (pure); the watch itself is `kube.watch_async`'s three layers (reconnect,
list-then-watch with a relist on 410, one stream). The store keeps the snapshot, the
subscriptions and the resync.

Subscribers are keyed by application id (`spark-app-selector`). A subscriber is told the
application's pods when they change, and once right away if the store already knows them.
"Not there" is only ever told after a full list that started after the subscription, so a
trigger never mistakes a pod the watch has not delivered yet for a vanished driver.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
    NO_METRICS,
    MetricsSink,
    send,
    store_gauges,
    watch_relist,
)
from airflow_provider_sparkk8s.kube.listwatch import Listed, StreamEnded, WatchSpec, WatchStats
from airflow_provider_sparkk8s.kube.paths import resource_path
from airflow_provider_sparkk8s.kube.request import METADATA_LIST
from airflow_provider_sparkk8s.kube.watch_async import AsyncWatchClient, list_objects, watch_forever
from airflow_provider_sparkk8s.monitoring.disruption import condition as disruption
from airflow_provider_sparkk8s.monitoring.reducer import Pod, driver_has_ended, executor_has_ended
from airflow_provider_sparkk8s.monitoring.resync import listed_version, resync_plan
from airflow_provider_sparkk8s.monitoring.snapshot import (
    Snapshot,
    apply_list,
    merge_event,
    pod_key,
    pods_by_application,
    slim_pod,
)
from airflow_provider_sparkk8s.objects import resource_version
from airflow_provider_sparkk8s.provider_info import DEFAULT_RESYNC_INTERVAL
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods.async_pods import AsyncPods

log = logging.getLogger(__name__)

SPARK_PODS_SELECTOR = "spark-role in (driver,executor),spark-app-selector"


def dict_of(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot's own dict (the merge functions build plain dicts), or a copy."""
    return mapping if isinstance(mapping, dict) else dict(mapping)


class AsyncPodsClient(AsyncWatchClient, Protocol):
    """What the store needs of `AsyncKubeClient`: the watch layers' list and watch, the
    driver log (its subscribers read it through `AsyncPods`), and closing."""

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str: ...

    async def aclose(self) -> None: ...


@record
class StoreSettings:
    resync_interval: float = DEFAULT_RESYNC_INTERVAL
    # Half-open connections (a black hole: no bytes, no RST) are found by a read timeout,
    # not by bookmarks, which kube-apiserver sends only about once a minute. Each stream
    # asks the server to end it after 80-100% of `watch_timeout` (then it resumes from its
    # resourceVersion: one request, no list), so a healthy stream is never silent longer
    # than that; one silent for `watch_timeout + silence_slack` is dead and is reconnected.
    watch_timeout: float = 10.0
    silence_slack: float = 3.0
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    confirm_delay: float = 0.2  # new subscribers within this window share one confirming list
    # A resync lists versions only and GETs the pods that differ; past this many, one whole
    # list is cheaper (and keeps read requests O(1) after a long outage).
    refetch_limit: int = 16
    label_selector: str = SPARK_PODS_SELECTOR

    def watch_spec(self, path: str) -> WatchSpec:
        return WatchSpec(
            path,
            {"labelSelector": self.label_selector},
            timeout_seconds=self.watch_timeout,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
            read_timeout=self.watch_timeout + self.silence_slack,
            item_view=slim_pod,  # a list is slimmed pod by pod as it is decoded
        )


@dataclass
class StoreStats(WatchStats):
    """The watch layers' counters, plus the store's own."""

    list_failures: int = 0
    notifications: int = 0
    version_lists: int = 0  # resyncs that listed metadata only
    refetched: int = 0  # pods a resync found changed and fetched whole


class Subscription:
    """One application's pods, delivered as the latest value (older updates are dropped).

    Ten thousand of these wait at once, so each is small: slots, and a bare future only
    while its trigger waits (an asyncio.Event carries a deque of waiters)."""

    __slots__ = (
        "_disrupted",
        "_disruption_held",
        "_ended",
        "_ended_names",
        "_latest",
        "_waiter",
        "app_id",
        "confirmed",
        "created",
        "state",
    )

    def __init__(self, app_id: str, created: float):
        self.app_id = app_id
        self.created = created
        self.confirmed = False
        self.state: str | None = None  # what its follower last read: the store's gauges
        self._latest: tuple[Pod, ...] | None = None  # None: nothing new since `next`
        self._waiter: asyncio.Future[None] | None = None
        self._ended: list[Pod] | None = None  # made when the first pod ends
        self._ended_names: set[str] | None = None
        self._disrupted: Pod | None = None  # the driver's first version marked for disruption
        self._disruption_held = False

    def push(self, pods: tuple[Pod, ...]) -> None:
        self._latest = pods
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        # Every pushed version is seen here, before `next` keeps only the latest: hold each
        # executor's first version that shows its container ended, and the driver's end.
        for pod in pods:
            self.saw(pod)

    def saw(self, pod: Pod) -> None:
        """One version of one of its pods: kept if it is the first to show how it ended (or
        the driver's disruption mark). Also called with a deleted pod's last version, which
        no push carries: it may be the first to show the end, as a poller's catch-up sees it."""
        name = objects.name(pod)
        if not name or (self._ended_names is not None and name in self._ended_names):
            return
        if executor_has_ended(pod) or driver_has_ended(pod):
            if self._ended_names is None:
                self._ended_names = set()
            self._ended_names.add(name)
            self._ended = [*(self._ended or ()), pod]
        elif not self._disruption_held and self._marked_driver(pod):
            # An evicted driver may be gone before the next look: its mark says why.
            self._disrupted, self._disruption_held = pod, True

    @staticmethod
    def _marked_driver(pod: Pod) -> bool:
        return objects.spark_role(pod) == "driver" and disruption(pod) is not None

    def ended(self) -> list[Pod]:
        """Each executor's first version with an ended container, and the driver's first
        succeeded or failed version (and before it, its first version marked for
        disruption), once, since the last call. `next` delivers the latest pods only: Spark
        deletes a failed executor's pod at once, a submitter may delete a finished driver at
        once, and an evicted driver goes at once, so how they ended would otherwise be lost."""
        ended, self._ended = self._ended or [], None
        if self._disrupted is not None:  # before its end, if one came too
            ended, self._disrupted = [self._disrupted, *ended], None
        return ended

    async def next(self, timeout: float | None = None) -> tuple[Pod, ...] | None:
        """The application's pods once they changed, or None when `timeout` passed first."""
        if self._latest is None:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    async with asyncio.timeout(timeout):
                        await self._waiter
            except TimeoutError:
                return None
            finally:
                self._waiter = None
        pods, self._latest = self._latest, None
        return pods


class SnapshotStore:
    def __init__(
        self,
        client: AsyncPodsClient,
        namespace: str,
        settings: StoreSettings | None = None,
        metrics: MetricsSink = NO_METRICS,
    ):
        self.client = client
        self.namespace = namespace
        self.settings = settings or StoreSettings()
        self.metrics = metrics
        self._metric_tags = {"namespace": namespace}
        self._watch_lists = 0
        self._pods = AsyncPods(client)
        self.stats = StoreStats()
        self.snapshot = Snapshot()
        self._by_app: dict[str, tuple[Pod, ...]] = {}
        # A tuple per application: almost always one subscription (a set costs 216 bytes).
        self._subscribers: dict[str, tuple[Subscription, ...]] = {}
        self._list_now = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._spec = self.settings.watch_spec(resource_path("v1", "Pod", namespace))

    # -------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._follow(), name=f"sparkk8s-watch-{self.namespace}"),
            asyncio.create_task(self._resync_forever(), name=f"sparkk8s-resync-{self.namespace}"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.client.aclose()

    # -------------------------------------------------------------- subscribers

    def subscribe(self, app_id: str) -> Subscription:
        subscription = Subscription(app_id, time.monotonic())
        self._subscribers[app_id] = (*self._subscribers.get(app_id, ()), subscription)
        pods = self._by_app.get(app_id)
        if pods:
            subscription.confirmed = True
            subscription.push(pods)
        else:
            self._list_now.set()  # confirm absence (or find the pod) with a fresh list
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subs = self._subscribers.get(subscription.app_id, ())
        left = tuple(s for s in subs if s is not subscription)
        if left:
            self._subscribers[subscription.app_id] = left
        elif subs:
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

    # -------------------------------------------------------------- what the watch delivers

    async def _follow(self) -> None:
        """Apply what the watch layers deliver, for as long as the store runs."""
        async for item in watch_forever(self.client, self._spec, self.stats):
            if isinstance(item, Listed):
                self._watch_lists += 1
                if self._watch_lists > 1 and self.metrics.enabled:  # the first is no relist
                    send(self.metrics, (watch_relist(),), self._metric_tags)
                self._take_list(item)
            elif not isinstance(item, StreamEnded):
                self._take_event(item)
            del item  # the full objects are slimmed; do not keep them until the next event

    def _take_list(self, listed: Listed) -> None:
        change = apply_list(self.snapshot, listed.items, listed.resource_version)
        self._apply(change.snapshot, change.changed_apps)
        self._confirm_subscribers_before(listed.started)

    def _confirm_subscribers_before(self, list_started: float) -> None:
        """Subscribers that joined before this list began now know their pods, even none."""
        for app, subs in self._subscribers.items():
            waiting = [s for s in subs if not s.confirmed and s.created <= list_started]
            for subscription in waiting:
                subscription.confirmed = True
                subscription.push(self._by_app.get(app, ()))

    def _take_event(self, event: Mapping[str, Any]) -> None:
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return
        if event.get("type") != "BOOKMARK":
            event = {"type": event.get("type"), "object": slim_pod(obj)}
        # In place: the store owns the snapshot's dicts, so a change costs O(1), not O(pods).
        pods, tombstones = dict_of(self.snapshot.pods), dict_of(self.snapshot.tombstones)
        version, changed = merge_event(pods, tombstones, self.snapshot.resource_version, event)
        self.snapshot = Snapshot(pods, tombstones, version)
        if not changed:
            return
        if event.get("type") == "DELETED":  # its last version, which no push will carry
            gone = event["object"]
            for subscription in self._subscribers.get(objects.application_id(gone) or "", ()):
                subscription.saw(gone)
        # One pod changed: patch its applications' tuples instead of regrouping every pod.
        key = pod_key(event["object"])
        current = pods.get(key)
        for app in changed:
            kept = [p for p in self._by_app.get(app, ()) if pod_key(p) != key]
            if current is not None and objects.application_id(current) == app:
                kept.append(current)
            if kept:
                self._by_app[app] = tuple(kept)
            else:
                self._by_app.pop(app, None)
        self._notify(changed)

    # -------------------------------------------------------------- the periodic list

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
                await self._resync()
            except Exception as error:  # noqa: BLE001 - the watch, or the next round, catches up
                self.stats.list_failures += 1
                log.warning("listing Spark pods in %s failed: %s", self.namespace, error)
            self.report_states()

    def report_states(self) -> None:
        """The live applications by state, as gauges (once per resync round)."""
        if self.metrics.enabled:
            states = (s.state for subs in self._subscribers.values() for s in subs)
            send(self.metrics, store_gauges(states), self._metric_tags)

    async def _resync(self) -> None:
        """Versions only; the few pods whose version differs are fetched whole, and when
        more than `refetch_limit` differ, everything is listed whole (`monitoring.resync`)."""
        started = time.monotonic()
        body = await self.client.request(
            "GET",
            self._spec.path,
            params=self._spec.list_params(),
            each_item=listed_version,
            accept=METADATA_LIST,
        )
        self.stats.lists += 1
        self.stats.version_lists += 1
        plan = resync_plan(self.snapshot, body.get("items") or ())
        if len(plan.fetch) > self.settings.refetch_limit:
            self._take_list(await list_objects(self.client, self._spec, self.stats))
            return
        fetched = [pod for item in plan.fetch if (pod := await self._fetch(item.name))]
        self.stats.refetched += len(plan.fetch)
        self._take_list(Listed((*plan.kept, *fetched), resource_version(body), started))

    async def _fetch(self, name: str) -> Pod | None:
        """One pod whole, slimmed; None once it is gone (the list then drops it)."""
        pod = await self._pods.get(self.namespace, name)
        return None if pod is None else slim_pod(pod)


# ------------------------------------------------------------------ the per-loop registry

ClientFactory = Callable[[], Awaitable[AsyncPodsClient]]


@dataclass
class _Entry:
    store: SnapshotStore | None = None
    users: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None  # why the client could not be built


_registry: dict[tuple[int, str, str], _Entry] = {}


class shared_store:  # noqa: N801 - used as a function: `async with shared_store(...)`
    """The store for (connection, namespace) in this event loop: created by the first user,
    stopped when the last one leaves. The first user's settings are the store's settings.

    A class, not an @asynccontextmanager: every deferred task holds one for its whole wait,
    and a generator-based one costs about half a kilobyte more per task."""

    __slots__ = (
        "_client_factory",
        "_connection_id",
        "_entry",
        "_key",
        "_metrics",
        "_namespace",
        "_settings",
    )

    def __init__(
        self,
        connection_id: str,
        namespace: str,
        client_factory: ClientFactory,
        settings: StoreSettings | None = None,
        metrics: MetricsSink = NO_METRICS,
    ):
        self._connection_id = connection_id
        self._namespace = namespace
        self._client_factory: ClientFactory | None = client_factory
        self._settings = settings
        self._metrics = metrics
        self._key: tuple[int, str, str] | None = None
        self._entry: _Entry | None = None

    async def __aenter__(self) -> SnapshotStore:
        self._key = key = (id(asyncio.get_running_loop()), self._connection_id, self._namespace)
        while True:
            entry = _registry.get(key)
            if entry is None:
                entry = _registry[key] = _Entry()
                await self._build(entry)
                break
            await entry.ready.wait()
            if entry.store is not None:
                break
            if entry.error is not None:
                raise RuntimeError(
                    f"the Kubernetes client for connection {self._connection_id!r} could not "
                    "be built"
                ) from entry.error
            # Its builder was cancelled (its task was killed): build it for ourselves.
        self._client_factory = None  # built or borrowed: the trigger need not be kept
        store = entry.store
        assert store is not None
        entry.users += 1
        self._entry = entry
        return store

    async def _build(self, entry: _Entry) -> None:
        assert self._key is not None and self._client_factory is not None
        try:
            client = await self._client_factory()
            entry.store = SnapshotStore(client, self._namespace, self._settings, self._metrics)
            entry.store.start()
        except Exception as error:
            entry.error = error
            raise
        finally:
            entry.ready.set()
            if entry.store is None:
                del _registry[self._key]

    async def __aexit__(self, *exc_info: object) -> None:
        entry, key, self._entry = self._entry, self._key, None
        if entry is None or entry.store is None or key is None:
            return
        entry.users -= 1
        if entry.users == 0 and _registry.get(key) is entry:
            del _registry[key]
            await entry.store.stop()
