"""The snapshot store's logic against an in-memory API: watch, relist, resync, subscribers."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from airflow_provider_sparkk8s.services.following.store import (
    SnapshotStore,
    StoreSettings,
    shared_store,
)
from testenv.harness.pod_builders import APP, SCHEDULED, pod, running, terminated
from testenv.harness.waiting import until
from tests.monitoring.fake_kube import FakeKube

OTHER = "spark-ffffffffffffffffffffffffffffffff"
FAST = StoreSettings(resync_interval=60.0, confirm_delay=0.01, backoff_base=0.01, backoff_max=0.05)


async def next_pods(subscription, timeout=5.0):
    pods = await subscription.next(timeout)
    assert pods is not None, "no update delivered"
    return pods


def phases(pods):
    return sorted(p["status"].get("phase") for p in pods)


@pytest.fixture
async def kube_and_store():
    kube = FakeKube()
    store = SnapshotStore(kube, "ns", FAST)
    yield kube, store
    await store.stop()


async def test_existing_pods_are_delivered_on_subscribe_and_changes_follow(kube_and_store):
    kube, store = kube_and_store
    kube.put(pod("d", phase="Pending"))
    kube.put(pod("x", app=OTHER))
    store.start()
    sub = store.subscribe(APP)
    assert phases(await next_pods(sub)) == ["Pending"]
    await until(lambda: kube.streams)
    kube.put(pod("d", phase="Running", conditions=SCHEDULED, containers=[running()]))
    assert phases(await next_pods(sub)) == ["Running"]
    kube.put(pod("x", app=OTHER, phase="Running"))  # another application: no wake-up
    assert await sub.next(0.05) is None
    assert store.stats.lists == 1


async def test_an_executors_end_waits_for_its_subscriber(kube_and_store):
    """Latest-value delivery drops intermediate states; an executor's first ended version is
    kept for the subscriber, once."""
    kube, store = kube_and_store
    executor = "spark-kubernetes-executor"
    kube.put(pod("e1", role="executor", phase="Running", containers=[running(executor)]))
    store.start()
    sub = store.subscribe(APP)
    await next_pods(sub)
    await until(lambda: kube.streams)
    ended = pod(
        "e1", role="executor", phase="Failed", containers=[terminated(137, "Error", name=executor)]
    )
    kube.put(ended)
    kube.put(
        {**ended, "metadata": {**ended["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    )
    kube.delete("e1")
    await until(lambda: store.stats.events >= 3)
    assert await next_pods(sub) == ()  # the failed versions were never delivered ...
    (first,) = sub.ended()  # ... but the first one that ended is kept
    assert first["status"]["phase"] == "Failed"
    assert "deletionTimestamp" not in first["metadata"]
    assert sub.ended() == []
    # The driver's end too: a submitter may delete a finished driver at once.
    kube.put(pod("d", phase="Running", containers=[running()]))
    kube.put(pod("d", phase="Succeeded", containers=[terminated(0, "Completed")]))
    kube.delete("d")
    await until(lambda: store.stats.events >= 6)
    assert await next_pods(sub) == ()
    (driver_end,) = sub.ended()
    assert (driver_end["metadata"]["name"], driver_end["status"]["phase"]) == ("d", "Succeeded")


async def test_an_end_shown_only_by_the_deleted_event_is_kept(kube_and_store):
    """A deleted pod's last version (the DELETED event's object) may be the first to show its
    container's end; a poller's catch-up replays it, so the store's subscriber sees it too,
    and both followers count the executor the same way."""
    kube, store = kube_and_store
    executor = "spark-kubernetes-executor"
    kube.put(pod("e2", role="executor", phase="Running", containers=[running(executor)]))
    store.start()
    sub = store.subscribe(APP)
    await next_pods(sub)
    await until(lambda: kube.streams)
    kube.put_silently(
        pod(
            "e2",
            role="executor",
            phase="Succeeded",
            containers=[terminated(0, "Completed", name=executor)],
        )
    )
    kube.delete("e2")
    await until(lambda: store.stats.events >= 1)
    assert await next_pods(sub) == ()
    (last,) = sub.ended()
    assert (last["metadata"]["name"], last["status"]["phase"]) == ("e2", "Succeeded")
    assert sub.ended() == []


async def test_a_drivers_disruption_mark_waits_for_its_subscriber(kube_and_store):
    """An evicted driver is marked (DisruptionTarget) and deleted at once: the marked version,
    never delivered as latest, is kept once, before the driver's end if one came too."""
    kube, store = kube_and_store
    kube.put(pod("d", phase="Running", containers=[running()]))
    store.start()
    sub = store.subscribe(APP)
    await next_pods(sub)
    await until(lambda: kube.streams)
    evicting = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    marked = pod("d", phase="Running", containers=[running()], conditions=[evicting])
    kube.put(marked)
    kube.put(
        {**marked, "metadata": {**marked["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    )
    kube.delete("d")
    await until(lambda: store.stats.events >= 3)
    assert await next_pods(sub) == ()
    (kept,) = sub.ended()
    assert kept["status"]["conditions"][0]["reason"] == "EvictionByEvictionAPI"
    assert sub.ended() == []
    kube.put(marked)  # the mark is kept once per subscription
    await until(lambda: store.stats.events >= 4)
    await next_pods(sub)
    assert sub.ended() == []


async def test_absent_application_is_reported_empty_only_after_a_fresh_list(kube_and_store):
    kube, store = kube_and_store
    store.start()
    await until(lambda: kube.streams)
    lists_before = kube.list_count()
    sub = store.subscribe(APP)
    assert await next_pods(sub) == ()
    assert kube.list_count() == lists_before + 1
    assert sub.confirmed


async def test_subscribers_arriving_together_share_one_confirming_list(kube_and_store):
    kube, store = kube_and_store
    store.start()
    await until(lambda: kube.streams)
    lists_before = kube.list_count()
    subs = [store.subscribe(f"spark-{i:032x}") for i in range(50)]
    for sub in subs:
        assert await next_pods(sub) == ()
    assert kube.list_count() == lists_before + 1


async def test_a_pod_created_just_before_subscribing_is_not_reported_missing(kube_and_store):
    kube, store = kube_and_store
    store.start()
    await until(lambda: kube.streams)
    kube.put_silently(pod("d"))  # created, but the watch has not delivered it yet
    sub = store.subscribe(APP)
    assert [p["metadata"]["name"] for p in await next_pods(sub)] == ["d"]


async def test_deletion_is_delivered_as_no_pods(kube_and_store):
    kube, store = kube_and_store
    kube.put(pod("d"))
    store.start()
    sub = store.subscribe(APP)
    await next_pods(sub)
    await until(lambda: kube.streams)
    kube.delete("d")
    assert await next_pods(sub) == ()


async def test_stream_end_resumes_from_the_last_resource_version_without_relisting(kube_and_store):
    kube, store = kube_and_store
    store.start()
    sub = store.subscribe(APP)
    await next_pods(sub)
    await until(lambda: kube.streams)
    kube.put(pod("d"))
    await next_pods(sub)
    last = str(kube.rv)
    kube.end_streams(
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(kube.rv + 5)}}}
    )
    await until(lambda: len(kube.watch_params) == 2)
    assert kube.watch_params[1]["resourceVersion"] == str(int(last) + 5)
    assert kube.watch_params[1]["allowWatchBookmarks"] == "true"
    # Short streams, each with a client-side read timeout a little past the server's: a
    # stream silent longer than that is a half-open connection, and is reconnected.
    timeout = FAST.watch_timeout
    assert 0.8 * timeout - 1 <= int(kube.watch_params[1]["timeoutSeconds"]) <= timeout
    assert kube.read_timeouts[1] == timeout + FAST.silence_slack
    assert store.stats.lists == 1


async def test_a_silent_stream_is_dropped_at_its_read_timeout_and_resumed(kube_and_store):
    """A black hole: the stream stays open and says nothing. The sender's read timeout ends
    it (the fake honours read_timeout like httpx), and the store resumes without a list."""
    kube, _ = kube_and_store
    settings = StoreSettings(
        resync_interval=600.0, confirm_delay=0.01, watch_timeout=1.0, silence_slack=0.2
    )
    store = SnapshotStore(kube, "ns", settings)
    store.start()
    try:
        await until(lambda: len(kube.watch_params) >= 3, timeout=10)
        assert kube.read_timeouts[0] == pytest.approx(1.2)
        assert store.stats.lists == 1  # resumed from its resourceVersion each time
    finally:
        await store.stop()


async def test_410_gone_relists_and_recovers_missed_changes(kube_and_store):
    kube, store = kube_and_store
    kube.put(pod("d"))
    store.start()
    sub = store.subscribe(APP)
    await next_pods(sub)
    await until(lambda: kube.streams)
    kube.put_silently(pod("d", phase="Failed", containers=[terminated(3, "Error")]))
    kube.gone_below = kube.rv  # everything we could resume from is compacted
    kube.end_streams()
    assert phases(await next_pods(sub)) == ["Failed"]
    assert store.stats.gone == 1
    assert store.stats.lists == 2


async def test_api_down_backs_off_and_the_resync_list_repairs_a_missed_completion():
    kube = FakeKube()
    kube.put(pod("d", phase="Running", containers=[running()]))
    store = SnapshotStore(
        kube,
        "ns",
        StoreSettings(resync_interval=0.2, confirm_delay=0.01, backoff_base=0.01, backoff_max=0.05),
    )
    store.start()
    try:
        sub = store.subscribe(APP)
        await next_pods(sub)
        await until(lambda: kube.streams)
        kube.hang_watches = True  # the watch goes silent: half-open connection
        kube.end_streams()
        kube.put_silently(pod("d", phase="Succeeded", containers=[terminated(0)]))
        assert phases(await next_pods(sub, 3)) == ["Succeeded"]
    finally:
        await store.stop()


async def test_watch_failures_reconnect_with_backoff():
    kube = FakeKube()
    store = SnapshotStore(kube, "ns", FAST)
    kube.fail_watches = True
    store.start()
    try:
        await until(lambda: store.stats.reconnects >= 3)
        kube.fail_watches = False
        await until(lambda: kube.streams)
        kube.put(pod("d"))
        sub = store.subscribe(APP)
        assert len(await next_pods(sub)) == 1
    finally:
        await store.stop()


async def test_failing_lists_are_counted_and_do_not_stop_the_store():
    kube = FakeKube()
    store = SnapshotStore(
        kube,
        "ns",
        StoreSettings(
            resync_interval=0.05, confirm_delay=0.01, backoff_base=0.01, backoff_max=0.02
        ),
    )
    store.start()
    try:
        await until(lambda: kube.streams)
        kube.fail_requests = True
        await until(lambda: store.stats.list_failures >= 2)
        kube.fail_requests = False
        kube.put_silently(pod("d"))
        sub = store.subscribe(APP)
        assert len(await next_pods(sub)) == 1
    finally:
        await store.stop()


async def test_shared_store_is_one_per_connection_and_namespace_and_stops_with_the_last_user():
    kubes: list[FakeKube] = []

    async def factory():
        kubes.append(FakeKube())
        return kubes[-1]

    async with shared_store("c", "ns", factory, FAST) as first:
        async with (
            shared_store("c", "ns", factory, FAST) as second,
            shared_store("c", "other", factory, FAST) as third,
        ):
            assert first is second and first is not third
            assert not any(kube.closed for kube in kubes)
        assert third.client.closed and not first.client.closed
    assert first.client.closed
    assert len(kubes) == 2


async def test_shared_store_reports_its_factorys_failure_and_keeps_nothing():
    async def broken():
        raise RuntimeError("no connection c")

    with pytest.raises(RuntimeError, match="no connection c"):
        async with shared_store("c", "ns", broken, FAST):
            pass

    async def factory():
        return FakeKube()

    async with shared_store("c", "ns", factory, FAST) as store:  # built afresh, not the failure
        assert isinstance(store.client, FakeKube)


async def test_a_waiting_user_builds_the_store_itself_when_its_builder_is_cancelled():
    """Two triggers of one namespace start together; the first (building the client) is
    killed by its user. The second must not fail: it builds the client for itself."""
    started, release = asyncio.Event(), asyncio.Event()
    built: list[FakeKube] = []

    async def slow_factory():
        started.set()
        await release.wait()
        built.append(FakeKube())
        return built[-1]

    async def use() -> Any:
        async with shared_store("c", "ns", slow_factory, FAST) as store:
            return store.client

    first = asyncio.create_task(use())
    await asyncio.wait_for(started.wait(), 5)
    second = asyncio.create_task(use())
    await asyncio.sleep(0.01)  # the second is now waiting for the first's client
    started.clear()
    first.cancel()
    await asyncio.wait([second], timeout=0.2)
    assert not second.done(), f"the second user gave up: {second.exception()!r}"
    await asyncio.wait_for(started.wait(), 5)  # the second has become the builder
    release.set()
    assert await asyncio.wait_for(second, 5) is built[-1]
    assert first.cancelled() and built[-1].closed  # the last user left: the store stopped


async def test_a_waiting_user_gets_the_builders_error():
    started, release = asyncio.Event(), asyncio.Event()

    async def broken():
        started.set()
        await release.wait()
        raise RuntimeError("no connection c")

    async def use() -> None:
        async with shared_store("c", "ns", broken, FAST):
            pass

    first = asyncio.create_task(use())
    await started.wait()
    second = asyncio.create_task(use())
    await asyncio.sleep(0.01)
    release.set()
    with pytest.raises(RuntimeError, match="no connection c"):
        await first
    with pytest.raises(RuntimeError, match="could not be built") as caught:
        await second
    assert "no connection c" in str(caught.value.__cause__)


async def test_a_changed_pod_replaces_only_itself_in_its_applications_view(kube_and_store):
    kube, store = kube_and_store
    kube.put(pod("d", phase="Running", containers=[running()]))
    kube.put(pod("e1", role="executor", exec_id="1", phase="Pending"))
    store.start()
    sub = store.subscribe(APP)
    assert len(await next_pods(sub)) == 2
    await until(lambda: kube.streams)
    kube.put(pod("e1", role="executor", exec_id="1", phase="Running"))
    assert phases(await next_pods(sub)) == ["Running", "Running"]
    kube.put(pod("e2", role="executor", exec_id="2", phase="Pending"))
    assert phases(await next_pods(sub)) == ["Pending", "Running", "Running"]
    kube.delete("e1")
    assert sorted(p["metadata"]["name"] for p in await next_pods(sub)) == ["d", "e2"]


def resync_settings(**kw):
    return StoreSettings(
        resync_interval=0.2, confirm_delay=0.01, backoff_base=0.01, backoff_max=0.05, **kw
    )


def gets_of_one_pod(kube):
    return [path for method, path, _ in kube.requests if method == "GET" and "/pods/" in path]


@contextlib.asynccontextmanager
async def watch_dead_after_first_list(kube, settings):
    """A started store whose subscriber to APP has its first pods; then every watch hangs
    (a half-open connection), so only the resync can tell what changes."""
    store = SnapshotStore(kube, "ns", settings)
    store.start()
    try:
        sub = store.subscribe(APP)
        await next_pods(sub)
        await until(lambda: kube.streams)
        kube.hang_watches = True
        kube.end_streams()
        yield store, sub
    finally:
        await store.stop()


async def test_a_resync_lists_versions_only_and_fetches_just_the_missed_change():
    kube = FakeKube()
    for name in ("a", "b", "c"):
        kube.put(pod(name, app=OTHER if name != "a" else APP, uid=f"uid-{name}"))
    async with watch_dead_after_first_list(kube, resync_settings()) as (store, sub):
        kube.put_silently(pod("a", uid="uid-a", phase="Succeeded", containers=[terminated(0)]))
        assert phases(await next_pods(sub, 3)) == ["Succeeded"]
        assert gets_of_one_pod(kube) == ["/api/v1/namespaces/ns/pods/a"]
        assert store.stats.version_lists >= 1 and store.stats.refetched == 1
        held = store.snapshot.pods["uid-b"]
        await until(lambda: store.stats.version_lists >= 3)
        assert store.snapshot.pods["uid-b"] is held  # unchanged: the same object, not a copy
        assert store.stats.refetched == 1


async def test_a_resync_drops_a_pod_deleted_while_the_watch_was_dead():
    kube = FakeKube()
    kube.put(pod("a", uid="uid-a", phase="Running"))
    async with watch_dead_after_first_list(kube, resync_settings()) as (_, sub):
        kube.pods.pop("a")  # deleted, and the watch never said so
        assert await next_pods(sub, 3) == ()
        assert gets_of_one_pod(kube) == []


async def test_more_changes_than_the_refetch_limit_are_read_by_one_whole_list():
    kube = FakeKube()
    for index in range(5):
        kube.put(pod(f"p{index}", uid=f"uid-{index}", phase="Running"))
    async with watch_dead_after_first_list(kube, resync_settings(refetch_limit=2)) as (store, _):
        for index in range(5):
            kube.put_silently(pod(f"p{index}", uid=f"uid-{index}", phase="Succeeded"))
        await until(lambda: phases(store._by_app.get(APP, ())) == ["Succeeded"] * 5, 3)
        assert gets_of_one_pod(kube) == [] and store.stats.refetched == 0
        whole_lists = [p for m, p, params in kube.requests if m == "GET" and p.endswith("/pods")]
        assert len(whole_lists) > store.stats.version_lists  # the first list, then the fallback


async def test_the_versions_list_asks_for_metadata_only():
    kube = FakeKube()
    asked = []
    real = kube.request

    async def request(method, path, **kw):
        asked.append(kw.get("accept"))
        return await real(method, path, **kw)

    kube.request = request
    kube.put(pod("a", uid="uid-a"))
    store = SnapshotStore(kube, "ns", resync_settings())
    store.start()
    try:
        await until(lambda: store.stats.version_lists >= 1)
        assert asked[0] is None  # the watch layer's first list: whole pods
        assert any(
            a and a.startswith("application/json;as=PartialObjectMetadataList") for a in asked
        )
    finally:
        await store.stop()


class RecordingSink:
    enabled = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, float, dict[str, str]]] = []

    def incr(self, name: str, count: int, tags: Any) -> None:
        self.sent.append((name, count, dict(tags)))

    def defer(self, work: Any) -> None:
        work()

    def gauge(self, name: str, value: float, tags: Any) -> None:
        self.sent.append((name, value, dict(tags)))

    def timing(self, name: str, seconds: float, tags: Any) -> None:
        self.sent.append((name, seconds, dict(tags)))


async def test_a_relist_after_410_is_counted_and_the_first_list_is_not():
    sink = RecordingSink()
    kube = FakeKube()
    store = SnapshotStore(kube, "ns", FAST, sink)
    try:
        kube.put(pod("d"))
        store.start()
        sub = store.subscribe(APP)
        await next_pods(sub)
        await until(lambda: kube.streams)
        assert [s for s in sink.sent if s[0] == "sparkk8s.store.watch_relists"] == []
        kube.put_silently(pod("d", phase="Failed", containers=[terminated(3, "Error")]))
        kube.gone_below = kube.rv
        kube.end_streams()
        await next_pods(sub)
        relists = [s for s in sink.sent if s[0] == "sparkk8s.store.watch_relists"]
        assert relists == [("sparkk8s.store.watch_relists", 1, {"namespace": "ns"})]
    finally:
        await store.stop()


async def test_the_store_reports_live_applications_by_the_state_their_followers_read():
    sink = RecordingSink()
    store = SnapshotStore(FakeKube(), "ns", FAST, sink)
    first, second, third = store.subscribe(APP), store.subscribe(OTHER), store.subscribe("x")
    first.state, second.state = "running", "running"
    third.state = "pending"
    store.report_states()
    gauges = {t["state"]: v for name, v, t in sink.sent if name == "sparkk8s.store.applications"}
    assert gauges == {
        "submitted": 0,
        "pending": 1,
        "running": 2,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
    }
    assert all(t["namespace"] == "ns" for _, _, t in sink.sent)
    store.unsubscribe(third)
    sink.sent.clear()
    store.report_states()
    assert ("sparkk8s.store.applications", 0, {"namespace": "ns", "state": "pending"}) in sink.sent
