"""SparkK8sConnectServerTrigger: waits in the triggerer until a Connect server is ready (its
driver runs and its gRPC port answers) or has ended, whichever comes first.

The condition is `application.connect.server_rules.readiness`, the same rule the worker-side wait
uses; this trigger only reads the pod and tries the port. Its kwargs name the server, never
its token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow_provider_sparkk8s.application.connect import server_rules as rules
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.services.connect.server_lifecycle import aport_answers
from airflow_provider_sparkk8s.services.pods.async_pods import AsyncPods
from airflow_provider_sparkk8s.version_compat import BaseTrigger, TriggerEvent


class SparkK8sConnectServerTrigger(BaseTrigger):  # type: ignore[misc]
    def __init__(
        self,
        kubernetes_conn_id: str,
        namespace: str,
        driver_pod: str,
        port: int,
        timeout_seconds: float,
        poll_interval: float = 2.0,
    ) -> None:
        super().__init__()
        self.kubernetes_conn_id = kubernetes_conn_id
        self.namespace = namespace
        self.driver_pod = driver_pod
        self.port = port
        self.timeout_seconds = timeout_seconds
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "namespace": self.namespace,
                "driver_pod": self.driver_pod,
                "port": self.port,
                "timeout_seconds": self.timeout_seconds,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        client = await SparkK8sHook(self.kubernetes_conn_id, self.namespace).get_async_client()
        try:
            yield TriggerEvent(await self._wait(AsyncPods(client)))
        finally:
            await client.aclose()

    async def _wait(self, pods: AsyncPods) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_seconds
        while True:
            pod = await pods.get(self.namespace, self.driver_pod)
            status = (pod or {}).get("status") or {}
            address = status.get("podIP")
            answered = None
            if address and status.get("phase") == "Running":
                answered = await aport_answers(address, self.port)
            state = rules.readiness(pod, answered)
            if isinstance(state, rules.Ready):
                return {"status": "ready", "pod_ip": state.pod_ip}
            if isinstance(state, rules.Ended):
                return {"status": "ended", "reason": state.reason}
            if time.monotonic() >= deadline:
                return {
                    "status": "ended",
                    "reason": f"not ready after {self.timeout_seconds:.0f}s: {state.detail}",
                }
            await asyncio.sleep(self.poll_interval)
