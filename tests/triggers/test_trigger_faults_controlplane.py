"""Faults with 100 applications tracked by one shared store, on the real control plane."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from testenv.harness.waiting import until, wait_for
from testenv.trigger_fleet.tracked_apps import (
    Fleet,
    all_running,
    all_seen_running,
    assert_every_completion_reported,
    create_held_apps,
    release,
    start_triggers,
)
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(420)]

APPS = 100


@pytest.fixture
def conn_id(monkeypatch, kubeconfig):
    return connection_for(monkeypatch, kubeconfig)


@pytest.fixture
def fleet(namespace, kube_admin):
    apps = create_held_apps(kube_admin, namespace, APPS)
    wait_for(lambda: all_running(kube_admin, namespace, APPS), 120, f"{APPS} drivers Running")
    return Fleet(namespace, apps)


async def release_all(api, fleet: Fleet, apps=None) -> None:
    for app in apps if apps is not None else fleet.apps:
        await asyncio.to_thread(release, api, fleet.namespace, app)


async def finish(fleet: Fleet, timeout: float = 120) -> None:
    await until(lambda: all(app.payload for app in fleet.apps), timeout, "every final event")
    await asyncio.gather(*fleet.tasks)


def wrap_client(monkeypatch, wrapper) -> None:
    """Triggers get `wrapper(real AsyncKubeClient)` from the hook."""
    real = SparkK8sApplicationTrigger._client

    async def client(self):
        return wrapper(await real(self))

    monkeypatch.setattr(SparkK8sApplicationTrigger, "_client", client)


class ClientWrapper:
    def __init__(self, inner: Any):
        self.inner = inner
        self.watch_calls: list[dict] = []

    async def request(self, *args, **kwargs):
        return await self.inner.request(*args, **kwargs)

    async def text(self, *args, **kwargs):
        return await self.inner.text(*args, **kwargs)

    async def aclose(self):
        await self.inner.aclose()

    def watch(self, path, params=None, **kwargs):
        self.watch_calls.append(dict(params or {}))
        return self.inner.watch(path, params, **kwargs)


async def test_api_server_restart_mid_run_loses_no_completion(
    conn_id, fleet, kube_admin, control_plane, stores
):
    start_triggers(fleet, conn_id, resync_interval=5.0)
    await until(lambda: all_seen_running(fleet), 60, "every trigger to see its driver running")
    first, second = fleet.apps[: APPS // 2], fleet.apps[APPS // 2 :]
    await release_all(kube_admin, fleet, first)  # these finish around the restart
    await asyncio.to_thread(control_plane.restart_apiserver)
    await release_all(kube_admin, fleet, second)
    await finish(fleet)
    assert_every_completion_reported(fleet)
    assert stores == []


async def test_410_gone_relists_and_every_completion_is_reported(
    conn_id, fleet, kube_admin, monkeypatch, control_plane, stores
):
    # A young API server's watch cache still holds resourceVersion 1; after a restart the
    # cache starts at the current revision, so resuming from 1 is "too old" (410 Gone).
    await asyncio.to_thread(control_plane.restart_apiserver)
    wrappers: list[ClientWrapper] = []

    class ExpiredResume(ClientWrapper):
        """The first resume asks for resourceVersion 1, long compacted: the server says 410."""

        def watch(self, path, params=None, **kwargs):
            params = dict(params or {})
            if not self.watch_calls:
                params["resourceVersion"] = "1"
            return super().watch(path, params, **kwargs)

    wrap_client(monkeypatch, lambda inner: wrappers.append(ExpiredResume(inner)) or wrappers[-1])
    start_triggers(fleet, conn_id, resync_interval=60.0)
    await until(lambda: all_seen_running(fleet), 60, "every trigger to see its driver running")
    [store] = stores
    await until(
        lambda: store.stats.gone >= 1 and store.stats.lists >= 2, 30, "410 Gone, then a relist"
    )
    assert wrappers[0].watch_calls[0]["resourceVersion"] == "1"
    await release_all(kube_admin, fleet)
    await finish(fleet)
    assert_every_completion_reported(fleet)


async def test_a_dead_watch_is_covered_by_the_periodic_list(
    conn_id, fleet, kube_admin, monkeypatch, stores
):
    class DeadAfterFirstList(ClientWrapper):
        """Every watch hangs without a byte, as a half-open connection would."""

        def watch(self, path, params=None, **kwargs):
            self.watch_calls.append(dict(params or {}))

            async def silent():
                await asyncio.Event().wait()
                yield {}

            return silent()

    wrap_client(monkeypatch, DeadAfterFirstList)
    start_triggers(fleet, conn_id, resync_interval=2.0)
    await until(lambda: all_seen_running(fleet), 60, "every trigger to see its driver running")
    [store] = stores
    await release_all(kube_admin, fleet)
    await finish(fleet, timeout=90)
    assert_every_completion_reported(fleet)
    assert store.stats.events == 0 and store.stats.streams == 1  # only the lists told them
    assert store.stats.lists >= 2


async def test_server_side_watch_timeouts_resume_without_relisting(
    conn_id, fleet, kube_admin, monkeypatch, stores
):
    from airflow_provider_sparkk8s.services.following import store as store_module

    monkeypatch.setattr(
        SparkK8sApplicationTrigger,
        "_store_settings",
        lambda self: store_module.StoreSettings(resync_interval=600.0, watch_timeout=2.0),
    )
    start_triggers(fleet, conn_id)
    await until(lambda: all_seen_running(fleet), 60, "every trigger to see its driver running")
    [store] = stores
    await until(lambda: store.stats.streams >= 3, 30, "the server to close the watch twice")
    await release_all(kube_admin, fleet)
    await finish(fleet)
    assert_every_completion_reported(fleet)
    assert store.stats.lists == 1 and store.stats.gone == 0  # resumed, never relisted
