"""The sensor on the real control plane: poke mode and deferrable mode."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_sparkk8s.errors import ApplicationFailed, InfrastructureFailure
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from airflow_provider_sparkk8s.version_compat import TaskDeferred
from testenv.harness.kube import request
from testenv.harness.pods import (
    EXIT_CODE,
    HOLD,
    RUN_MS,
    create,
    new_app_id,
    phase,
    spark_pod,
    wait_for_pod,
)
from testenv.harness.waiting import wait_for
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]


@pytest.fixture
def conn_id(monkeypatch, kubeconfig):
    return connection_for(monkeypatch, kubeconfig)


def test_poke_mode_follows_an_application_to_success(conn_id, namespace, kube_admin):
    app = new_app_id()
    sensor = SparkK8sApplicationSensor(
        task_id="wait", application_id=app, namespace=namespace, kubernetes_conn_id=conn_id
    )
    assert sensor.poke({}) is False  # not submitted yet
    create(kube_admin, namespace, spark_pod("poke-driver", app, annotations={RUN_MS: "1500"}))
    result = wait_for(lambda: sensor.poke({}), 60, "the sensor to see success")
    assert result.xcom_value["state"] == "succeeded"
    assert result.xcom_value["driver_pod"] == "poke-driver"


def test_poke_mode_by_label_selector_fails_with_the_exit_code(conn_id, namespace, kube_admin):
    app = new_app_id()
    manifest = spark_pod("sel-driver", app, annotations={RUN_MS: "500", EXIT_CODE: "9"})
    manifest["metadata"]["labels"]["job"] = "nightly"
    create(kube_admin, namespace, manifest)
    wait_for_pod(kube_admin, namespace, "sel-driver", lambda p: phase(p) == "Failed", 60, "Failed")
    sensor = SparkK8sApplicationSensor(
        task_id="wait",
        label_selector="job=nightly",
        namespace=namespace,
        kubernetes_conn_id=conn_id,
    )
    with pytest.raises(ApplicationFailed, match="exit code 9"):
        sensor.poke({})


async def test_deferrable_mode_hands_the_wait_to_the_trigger(conn_id, namespace, kube_admin):
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("def-driver", app, annotations={HOLD: "true"}))
    sensor = SparkK8sApplicationSensor(
        task_id="wait",
        driver_pod_name="def-driver",
        namespace=namespace,
        kubernetes_conn_id=conn_id,
        deferrable=True,
        resync_interval=5,
    )
    with pytest.raises(TaskDeferred) as deferred:
        await asyncio.to_thread(sensor.execute, {})
    trigger = deferred.value.trigger
    assert trigger.application_id == app

    async def first_event():
        async for event in trigger.run():
            return event.payload
        return None

    task = asyncio.create_task(first_event())
    await asyncio.to_thread(
        request,
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/def-driver",
        {"metadata": {"annotations": {HOLD: "false", RUN_MS: "200"}}},
        "application/merge-patch+json",
    )
    payload = await asyncio.wait_for(task, 60)
    assert sensor.execute_complete({}, payload)["state"] == "succeeded"


def test_poke_mode_reports_an_evicted_driver_gone_before_the_next_poke_as_evicted(
    conn_id, namespace, kube_admin
):
    """The Eviction API marks the running driver (DisruptionTarget) and deletes it; KWOK
    removes it at once, so the next poke lists no driver. Its catch-up replays the versions
    since the last poke from the API server's watch cache, the condition among them."""
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("evicted-driver", app, annotations={HOLD: "true"}))
    wait_for_pod(
        kube_admin, namespace, "evicted-driver", lambda p: phase(p) == "Running", 60, "Running"
    )
    sensor = SparkK8sApplicationSensor(
        task_id="wait", application_id=app, namespace=namespace, kubernetes_conn_id=conn_id
    )
    assert sensor.poke({}) is False  # running
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evicted-driver"},
    }
    request(kube_admin, "POST", f"/api/v1/namespaces/{namespace}/pods/evicted-driver/eviction",
            eviction)  # fmt: skip
    wait_for(
        lambda: request(kube_admin, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"] == [],
        30,
        "the evicted driver gone",
    )
    with pytest.raises(InfrastructureFailure) as caught:
        sensor.poke({})
    assert caught.value.reason == "EvictionByEvictionAPI", caught.value
    assert "evicted" in str(caught.value)
