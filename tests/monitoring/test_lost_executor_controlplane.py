"""A lost executor, counted alike by the three ways of waiting: the trigger (deferred), the
operator's wait in the worker (deferrable=False) and the sensor in poke mode.

On the real API server, the pods go through what a real run on a node showed
(tests/e2e, lost executor): an executor is killed (exit 137) and Spark deletes its pod at
once, then asks for another; when the application ends Spark deletes its executors, which
end while being deleted (SIGTERM, 143, or exit 1), and the driver succeeds. No executor is
left to list at the end, and the killed one was Failed only between two of a poller's looks.
Then the driver's submitter deletes it before the sensor looks again.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from testenv.harness.kube import request
from testenv.harness.pods import (
    MANUAL,
    create,
    new_app_id,
    running_status,
    set_pod_status,
    spark_pod,
    terminated_status,
    wait_for_pod_gone,
)
from testenv.harness.waiting import wait_for
from tests.support.waits import start_worker_wait
from tests.triggers.spark_pods import connection_for, make_trigger

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

DRIVER = ("spark-kubernetes-driver",)
EXECUTOR = ("spark-kubernetes-executor",)
HELD = "sparkk8s.test/held"  # a finalizer: the test writes a deleted pod's status, as a kubelet


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Cluster:
    """What Spark and a kubelet do to the pods, written by hand, in order."""

    def __init__(self, api: Any, namespace: str, app: str):
        self.api, self.namespace, self.app = api, namespace, app

    def start(self, name: str, role: str = "executor") -> None:
        manifest = spark_pod(name, self.app, role=role, annotations={MANUAL: "true"})
        if role == "executor":
            manifest["metadata"]["finalizers"] = [HELD]
        create(self.api, self.namespace, manifest)
        set_pod_status(self.api, self.namespace, name, running_status(self._names(role), now()))

    def end(self, name: str, code: int, role: str = "executor") -> None:
        reason = "Completed" if code == 0 else "Error"
        status = terminated_status(self._names(role), code, reason, now())
        set_pod_status(self.api, self.namespace, name, status)

    def delete(self, name: str) -> None:
        request(self.api, "DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{name}")

    def release(self, name: str) -> None:
        """The kubelet is done with a deleted pod: it goes."""
        request(
            self.api,
            "PATCH",
            f"/api/v1/namespaces/{self.namespace}/pods/{name}",
            {"metadata": {"finalizers": None}},
            "application/merge-patch+json",
        )
        wait_for_pod_gone(self.api, self.namespace, name)

    @staticmethod
    def _names(role: str) -> tuple[str, ...]:
        return DRIVER if role == "driver" else EXECUTOR


async def test_a_lost_executor_counts_alike_in_the_trigger_the_worker_and_the_poking_sensor(
    monkeypatch, kubeconfig, namespace, kube_admin
):
    conn_id = connection_for(monkeypatch, kubeconfig)
    app = new_app_id()
    cluster = Cluster(kube_admin, namespace, app)
    await asyncio.to_thread(cluster.start, "driver", "driver")
    for name in ("exec-1", "exec-2"):
        await asyncio.to_thread(cluster.start, name)

    trigger = make_trigger(conn_id, namespace, app, "driver")

    async def trigger_event() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("the trigger ended without an event")

    triggered = asyncio.create_task(trigger_event())

    tracked = TrackedApplication(app, namespace, "driver", DRIVER[0], now())
    waited = await asyncio.to_thread(start_worker_wait, monkeypatch, conn_id, tracked)

    sensor = SparkK8sApplicationSensor(
        task_id="poke", application_id=app, namespace=namespace, kubernetes_conn_id=conn_id
    )
    assert await asyncio.to_thread(sensor.poke, {}) is False  # running
    await asyncio.to_thread(
        wait_for,
        lambda: trigger.last_state is not None,
        60,
        "the trigger to have listed",
    )

    # An executor is killed; Spark deletes its pod at once and asks for another.
    await asyncio.to_thread(cluster.end, "exec-1", 137)
    await asyncio.to_thread(cluster.delete, "exec-1")
    await asyncio.to_thread(cluster.release, "exec-1")
    await asyncio.to_thread(cluster.start, "exec-3")
    assert await asyncio.to_thread(sensor.poke, {}) is False  # still running

    # The application ends: Spark deletes its executors, which end while being deleted.
    for name, code in (("exec-2", 143), ("exec-3", 1)):
        await asyncio.to_thread(cluster.delete, name)
        await asyncio.to_thread(cluster.end, name, code)
        await asyncio.to_thread(cluster.release, name)
    await asyncio.to_thread(cluster.end, "driver", 0, "driver")
    from_trigger = (await asyncio.wait_for(triggered, 60))["executors"]
    from_worker = (await asyncio.wait_for(asyncio.wrap_future(waited), 60))["executors"]

    # Its submitter deletes the driver before the sensor's next poke: the sensor still saw
    # how it ended (a list would find no driver: "disappeared", a failure).
    await asyncio.to_thread(cluster.delete, "driver")
    await asyncio.to_thread(wait_for_pod_gone, kube_admin, namespace, "driver")
    poked = await asyncio.to_thread(sensor.poke, {})
    assert poked.is_done and poked.xcom_value["state"] == "succeeded", poked
    from_sensor = poked.xcom_value["executors"]
    expected = {
        "counts": {"failed": 1, "deleted": 2},
        "failures": [
            {
                "pod_name": "exec-1",
                "executor_id": None,
                "reason": "Error",
                "exit_code": 137,
                "message": None,
            }
        ],
    }
    assert from_trigger == expected
    assert from_worker == expected
    assert from_sensor == expected
