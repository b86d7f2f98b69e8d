"""Pods read and deleted through one async service: the trigger's half of `services.pods`.

The trigger runs in the triggerer's event loop, so it cannot use the sync `DriverPods`; its
pod I/O (the driver log, a kill's delete and its ConfigMap read, the store's refetch of one
pod) comes here instead of writing requests of its own. Paths are built by `resource_path`,
as in `DriverPods`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from airflow_provider_sparkk8s.application.ownership import KILL_ATTEMPTS, Spare, kill_decision
from airflow_provider_sparkk8s.errors import KubeApiError, SparkK8sError
from airflow_provider_sparkk8s.kube.paths import resource_path
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView, view_of
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.services.pods import (
    cluster_queue_of_local,
    conf_map_path,
    local_queue_path,
    local_queue_unread,
    properties_of,
    workload_path,
    workload_unread,
)
from airflow_provider_sparkk8s.submission import kueue


class AsyncPodRequests(Protocol):
    """What the service needs of `AsyncKubeClient`."""

    async def request(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]: ...

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str: ...


class AsyncPodWrites(AsyncPodRequests, Protocol):
    """A client that also sends a body (a kill's preconditioned delete): `AsyncKubeClient`."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]: ...


class AsyncPods:
    """Pods through one async client; the caller owns (and closes) the client."""

    def __init__(self, client: AsyncPodRequests) -> None:
        self.client = client

    async def get(self, namespace: str, name: str) -> Pod | None:
        """The pod, or None when there is none of that name."""
        try:
            return await self.client.request("GET", resource_path("v1", "Pod", namespace, name))
        except KubeApiError as error:
            if error.status == 404:
                return None
            raise

    async def delete(self, namespace: str, name: str) -> bool:
        """Delete the pod (owner references take its objects); False when it was gone."""
        try:
            deleted = await self.client.request(
                "DELETE", resource_path("v1", "Pod", namespace, name)
            )
        except KubeApiError as error:
            if error.status != 404:
                raise
            return False
        # A driver admitted by Kueue: its Workload goes with it (submission/kueue.py).
        workload = kueue.workload_of(deleted) if isinstance(deleted, dict) else None
        if workload is not None:
            try:
                await self.client.request(
                    "DELETE", resource_path(kueue.API_VERSION, kueue.KIND, *workload)
                )
            except KubeApiError as error:
                if error.status != 404:
                    raise
        return True

    async def queue_view(
        self, namespace: str, workload: str, cluster_queue: str | None
    ) -> QueueView | None:
        """`DriverPods.queue_view` on the async client (the trigger's Workload reads)."""
        try:
            found = await self.client.request("GET", workload_path(namespace, workload))
        except SparkK8sError as error:
            return workload_unread(namespace, workload, cluster_queue, error)
        if cluster_queue is None and (queue := (found.get("spec") or {}).get("queueName")):
            try:
                local = await self.client.request("GET", local_queue_path(namespace, str(queue)))
                cluster_queue = cluster_queue_of_local(local)
            except SparkK8sError as error:  # the view names the LocalQueue instead
                local_queue_unread(namespace, str(queue), error)
        return view_of(found, cluster_queue)

    async def driver_properties(self, pod: Pod) -> dict[str, str] | None:
        """The driver's spark.properties from the conf ConfigMap its pod mounts (None when it
        mounts none); a failed read raises (KubeApiError)."""
        path = conf_map_path(pod)
        if path is None:
            return None
        return properties_of(await self.client.request("GET", path))

    async def log_text(self, namespace: str, name: str, params: Mapping[str, Any]) -> str:
        """A container's log as text; `params` are `pods/log`'s (container, sinceTime, ...)."""
        return await self.client.text(resource_path("v1", "Pod", namespace, name, "log"), params)


async def delete_if_owned(
    client: AsyncPodWrites, namespace: str, name: str, try_number: int | None
) -> Spare | None:
    """A kill's delete, as `DriverPods.delete_if_owned`: only while try `try_number` owns the
    pod, preconditioned on its uid and resourceVersion. None: deleted; else why not."""
    path = resource_path("v1", "Pod", namespace, name)
    for _ in range(KILL_ATTEMPTS):
        decision = kill_decision(await AsyncPods(client).get(namespace, name), try_number)
        if isinstance(decision, Spare):
            return decision
        try:
            await client.request("DELETE", path, json=decision.body)
        except KubeApiError as error:
            if error.status not in (404, 409):  # 409: changed since read; read again
                raise
            continue
        return None
    return Spare(f"it kept changing between {KILL_ATTEMPTS} reads and deletes")
