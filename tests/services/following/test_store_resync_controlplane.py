"""The store's metadata-only resync against the real kube-apiserver, with a dead watch: the
server answers a PartialObjectMetadataList, and only the pods that changed are fetched."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.paths import resource_path
from airflow_provider_sparkk8s.kube.request import METADATA_LIST
from airflow_provider_sparkk8s.services.following.store import SnapshotStore, StoreSettings
from testenv.harness.kube import request
from testenv.harness.pods import (
    MANUAL,
    create,
    new_app_id,
    running_status,
    set_pod_status,
    spark_pod,
    terminated_status,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(120)]

DRIVER = ("spark-kubernetes-driver",)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class DeadWatch:
    """The real client, whose watches hang without a byte (a half-open connection), and
    which notes every request's path and Accept header."""

    def __init__(self, inner: AsyncKubeClient):
        self.inner = inner
        self.requests: list[tuple[str, str | None]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self.requests.append((path, kwargs.get("accept")))
        return await self.inner.request(method, path, **kwargs)

    async def text(self, *args: Any, **kwargs: Any) -> str:
        return await self.inner.text(*args, **kwargs)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def watch(self, path: str, params: Any = None, **kwargs: Any):  # type: ignore[no-untyped-def]
        await asyncio.Event().wait()
        yield {}


async def next_phase(subscription, timeout: float = 30.0) -> list[str | None]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = await subscription.next(deadline - time.monotonic())
        if pods is not None:
            return [pod["status"].get("phase") for pod in pods]
    raise AssertionError("no update delivered")


async def test_a_resync_fetches_only_the_changed_pod_and_drops_the_deleted_one(
    kube_admin, kubeconfig, namespace
) -> None:  # type: ignore[no-untyped-def]
    apps = {name: new_app_id() for name in ("a-driver", "b-driver", "c-driver")}
    for name, app in apps.items():
        create(kube_admin, namespace, spark_pod(name, app, annotations={MANUAL: "true"}))
        set_pod_status(kube_admin, namespace, name, running_status(DRIVER, now()))
    client = DeadWatch(AsyncKubeClient(kubeconfig_settings(kubeconfig)))
    collection = resource_path("v1", "Pod", namespace)

    metadata = await client.inner.request("GET", collection, accept=METADATA_LIST)
    assert metadata["kind"] == "PartialObjectMetadataList"
    assert {item["metadata"]["name"] for item in metadata["items"]} == set(apps)
    assert all(set(item) == {"kind", "apiVersion", "metadata"} for item in metadata["items"])

    store = SnapshotStore(client, namespace, StoreSettings(resync_interval=1.0))
    store.start()
    try:
        sub_a, sub_b = store.subscribe(apps["a-driver"]), store.subscribe(apps["b-driver"])
        assert await next_phase(sub_a) == ["Running"]
        assert await next_phase(sub_b) == ["Running"]
        client.requests.clear()

        done = terminated_status(DRIVER, 0, "Completed", now())
        await asyncio.to_thread(set_pod_status, kube_admin, namespace, "a-driver", done)
        assert await next_phase(sub_a) == ["Succeeded"]  # the watch is dead: the resync told
        one_pod = [path for path, _ in client.requests if path != collection]
        assert one_pod == [f"{collection}/a-driver"]
        assert (collection, METADATA_LIST) in client.requests

        path = f"{collection}/b-driver"
        await asyncio.to_thread(request, kube_admin, "DELETE", path, {"gracePeriodSeconds": 0})
        assert await next_phase(sub_b) == []
        assert [p for p, _ in client.requests if p != collection] == one_pod  # no GET for b
        assert all(accept == METADATA_LIST for p, accept in client.requests if p == collection)
        assert store.stats.refetched == 1 and store.stats.version_lists >= 2
    finally:
        await store.stop()
