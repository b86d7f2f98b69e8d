"""Pods read and deleted through one async service: the trigger's half of
`services.pods.driver_pods`.

The trigger runs in the triggerer's event loop, so it cannot use the sync `DriverPods`; its
pod I/O (the driver log, a kill's delete and its ConfigMap read, the store's refetch of one
pod) comes here. Each operation is `pod_requests`', the same as `DriverPods`'; only
sending is written here (`AsyncPods.run`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, TypeVar

from airflow_provider_sparkk8s.application.task.ownership import Spare
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.services.pods import pod_requests as requests
from airflow_provider_sparkk8s.services.pods.pod_requests import Exchange, Operation, PodCall

_T = TypeVar("_T")


class AsyncPodRequests(Protocol):
    """What the service needs of `AsyncKubeClient`: a call sets only the keywords it uses
    (`PodCall.keywords`), so a client for reads needs no more than `params`."""

    def request(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None
    ) -> Awaitable[dict[str, Any]]: ...

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str: ...


# A client that also sends a body (a kill's preconditioned delete): `AsyncKubeClient`.
AsyncPodWrites = AsyncPodRequests


class AsyncPods:
    """Pods through one async client; the caller owns (and closes) the client."""

    def __init__(self, client: AsyncPodRequests) -> None:
        self.client = client

    async def run(self, operation: Operation[_T]) -> _T:
        """`DriverPods.run` awaited: the operation's calls, one by one; its result."""
        exchange = Exchange(operation)
        while (call := exchange.next_call()) is not None:
            try:
                exchange.answered(await self._send(call))
            except Exception as error:  # noqa: BLE001 - thrown back into the operation
                exchange.failed(error)
        return exchange.result

    async def _send(self, call: PodCall) -> Any:
        if call.text:
            return await self.client.text(call.path, call.params)
        request: Any = self.client.request  # a write's keywords: `AsyncKubeClient.request`
        return await request(call.method, call.path, **call.keywords())

    async def get(self, namespace: str, name: str) -> Pod | None:
        """The pod, or None when there is none of that name."""
        return await self.run(requests.get_pod(namespace, name))

    async def delete(self, namespace: str, name: str) -> bool:
        """Delete the pod (owner references take its objects); False when it was gone."""
        return await self.run(requests.delete_pod(namespace, name))

    async def queue_view(
        self, namespace: str, workload: str, cluster_queue: str | None
    ) -> QueueView | None:
        """`DriverPods.queue_view` on the async client (the trigger's Workload reads)."""
        return await self.run(requests.queue_view(namespace, workload, cluster_queue))

    async def driver_properties(self, pod: Pod) -> dict[str, str] | None:
        """The driver's spark.properties from the conf ConfigMap its pod mounts (None when it
        mounts none); a failed read raises (KubeApiError)."""
        return await self.run(requests.driver_properties(pod))

    async def log_text(self, namespace: str, name: str, params: Mapping[str, Any]) -> str:
        """A container's log as text; `params` are `pods/log`'s (container, sinceTime, ...)."""
        return await self.run(requests.log_text(namespace, name, params))


async def delete_if_owned(
    client: AsyncPodWrites, namespace: str, name: str, try_number: int | None
) -> Spare | None:
    """A kill's delete, as `DriverPods.delete_if_owned`: only while try `try_number` owns the
    pod, preconditioned on its uid and resourceVersion. None: deleted; else why not."""
    return await AsyncPods(client).run(requests.delete_if_owned(namespace, name, try_number))
