"""The cost per task, alike from the three ways of waiting: the trigger (over the shared
store), the operator's wait in the worker (the sync watch) and the sensor in poke mode.

On the real API server, pods with real requests go through an application's life written
by hand with known timestamps: two executors run, one is killed and its pod deleted at once,
a replacement starts, Spark deletes the rest when the application ends (they end while being
deleted) and the driver succeeds. Every figure is then known to the second.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from testenv.harness.pods import MANUAL, create, new_app_id, set_pod_status, spark_pod
from testenv.harness.waiting import wait_for
from tests.monitoring.test_lost_executor_controlplane import HELD
from tests.monitoring.test_lost_executor_controlplane import Cluster as LostExecutorCluster
from tests.support.waits import start_worker_wait
from tests.triggers.spark_pods import connection_for, make_trigger

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

DRIVER_REQUESTS = {"requests": {"cpu": "1", "memory": "1Gi"}}
EXECUTOR_REQUESTS = {
    "requests": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"},
    "limits": {"nvidia.com/gpu": "1"},  # an extended resource's request needs its limit
}


class Cluster(LostExecutorCluster):
    """What Spark and a kubelet do to the pods (the lost-executor test's deletions), with
    requests, and times `seconds` after the driver's creation."""

    def __init__(self, api: Any, namespace: str, app: str):
        super().__init__(api, namespace, app)
        self.t0 = datetime.now(UTC)

    def at(self, seconds: float) -> str:
        return (self.t0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def start(self, name: str, started: float, role: str = "executor") -> None:  # type: ignore[override]
        manifest = spark_pod(name, self.app, role=role, annotations={MANUAL: "true"})
        manifest["spec"]["containers"][0]["resources"] = (
            DRIVER_REQUESTS if role == "driver" else EXECUTOR_REQUESTS
        )
        if role == "executor":
            manifest["metadata"]["finalizers"] = [HELD]
        created = create(self.api, self.namespace, manifest)
        if role == "driver":  # the timeline starts at the driver's creation, to the second
            self.t0 = datetime.fromisoformat(created["metadata"]["creationTimestamp"])
        state = {"running": {"startedAt": self.at(started)}}
        set_pod_status(self.api, self.namespace, name, self._status(role, "Running", state))

    def end(  # type: ignore[override]
        self, name: str, started: float, finished: float, code: int, role: str = "executor"
    ) -> None:
        terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": self.at(started),
            "finishedAt": self.at(finished),
        }
        phase = "Succeeded" if code == 0 else "Failed"
        status = self._status(role, phase, {"terminated": terminated})
        set_pod_status(self.api, self.namespace, name, status)

    @staticmethod
    def _status(role: str, phase: str, state: dict[str, Any]) -> dict[str, Any]:
        container = "spark-kubernetes-driver" if role == "driver" else "spark-kubernetes-executor"
        return {
            "phase": phase,
            "containerStatuses": [
                {"name": container, "image": "kwok", "imageID": "", "ready": phase == "Running",
                 "restartCount": 0, "state": state}
            ],
        }  # fmt: skip


async def test_the_trigger_the_worker_and_the_poking_sensor_report_one_cost(
    monkeypatch, kubeconfig, namespace, kube_admin
):
    conn_id = connection_for(monkeypatch, kubeconfig)
    app = new_app_id()
    cluster = Cluster(kube_admin, namespace, app)
    run = asyncio.to_thread
    await run(cluster.start, "driver", 2, "driver")
    await run(cluster.start, "exec-1", 3)
    await run(cluster.start, "exec-2", 4)

    trigger = make_trigger(conn_id, namespace, app, "driver")

    async def trigger_event() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("the trigger ended without an event")

    triggered = asyncio.create_task(trigger_event())
    tracked = TrackedApplication(app, namespace, "driver", "spark-kubernetes-driver", cluster.at(0))
    waited = await run(start_worker_wait, monkeypatch, conn_id, tracked)
    sensor = SparkK8sApplicationSensor(
        task_id="poke", application_id=app, namespace=namespace, kubernetes_conn_id=conn_id
    )
    assert await run(sensor.poke, {}) is False  # running
    await run(wait_for, lambda: trigger.last_state is not None, 60, "the trigger to have listed")

    # exec-1 is killed and its pod deleted at once; a replacement starts.
    await run(cluster.end, "exec-1", 3, 13, 137)
    await run(cluster.delete, "exec-1")
    await run(cluster.release, "exec-1")
    await run(cluster.start, "exec-3", 14)
    assert await run(sensor.poke, {}) is False

    # The application ends: Spark deletes its executors, which end while being deleted.
    for name, started, finished, code in (("exec-2", 4, 20, 143), ("exec-3", 14, 24, 1)):
        await run(cluster.delete, name)
        await run(cluster.end, name, started, finished, code)
        await run(cluster.release, name)
    await run(cluster.end, "driver", 2, 30, 0, "driver")
    from_trigger = (await asyncio.wait_for(triggered, 60))["cost"]
    from_worker = (await asyncio.wait_for(asyncio.wrap_future(waited), 60))["cost"]
    poked = await run(sensor.poke, {})
    assert poked.is_done, poked
    from_sensor = poked.xcom_value["cost"]

    # driver 28 s x (1 core, 1 GiB); exec-1 10 s, exec-2 16 s, exec-3 10 s x (2, 2 GiB, 1 GPU)
    assert from_trigger["driver"] == {
        "core_seconds": 28.0, "gib_seconds": 28.0, "gpu_seconds": 0.0,
        "pending_seconds": 2.0, "pods": 1,
    }  # fmt: skip
    assert (from_trigger["core_seconds"], from_trigger["gib_seconds"]) == (100.0, 100.0)
    assert from_trigger["gpu_seconds"] == 36.0
    assert (from_trigger["peak_executors"], from_trigger["executor_pods"]) == (2, 3)
    assert from_worker == from_trigger
    assert from_sensor == from_trigger
