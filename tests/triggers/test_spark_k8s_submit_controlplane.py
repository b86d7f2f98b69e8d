"""SparkK8sSubmitTrigger's run() on the real control plane, with no Airflow around it: it
submits through the operator's task run, follows the KWOK driver on the shared store and
ends the task itself; a submission the API server refuses half-way leaves nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.task_end import (
    APPLICATION_XCOM_KEY,
    RETURN_VALUE_KEY,
)
from airflow_provider_sparkk8s.triggers.spark_k8s_submit import SparkK8sSubmitTrigger
from airflow_provider_sparkk8s.version_compat import TaskFailedEvent, TaskSuccessEvent
from testenv.fakes import FakeTaskInstance
from testenv.harness.kube import request
from testenv.harness.pods import RUN_MS, wait_for_pod_gone
from testenv.harness.waiting import wait_for
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

ANNOTATION = "spark.kubernetes.driver.annotation."
QUOTA = "no-more-configmaps"


@pytest.fixture
def conn_id(monkeypatch: pytest.MonkeyPatch, kubeconfig: Any) -> str:
    return connection_for(monkeypatch, kubeconfig)


def make_trigger(conn_id: str, namespace: str) -> SparkK8sSubmitTrigger:
    trigger = SparkK8sSubmitTrigger(
        kubernetes_conn_id=conn_id,
        following={"startup_timeout": 60.0, "get_logs": False},
        reporting={"run_summary": False},
        resync_interval=5.0,
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        name="spark_pi",
        image="apache/spark:4.0.1",
        spark_version="4.0.1",
        namespace=namespace,
        conf={ANNOTATION + RUN_MS: "1500"},
    )
    ti = FakeTaskInstance(dag_id="worker_free", task_id="spark_pi", run_id="manual__1")
    ti.max_tries = 0  # type: ignore[attr-defined]
    trigger.task_instance = ti  # type: ignore[assignment]  # what the triggerer sets
    # No Airflow here: the fake task instance stores what the SDK's XCom would.
    trigger.push_xcom = lambda ti, key, value: ti.xcom_push(key, value)  # type: ignore[method-assign,assignment]
    return trigger


async def run_to_end(trigger: SparkK8sSubmitTrigger) -> Any:
    async def drain() -> list[Any]:
        return [event async for event in trigger.run()]

    events = await asyncio.wait_for(drain(), 120)
    assert len(events) == 1, events
    return events[0]


def spark_objects(kube_admin: Any, namespace: str) -> list[str]:
    """Every pod, Service and ConfigMap a submission made (they carry the app's label)."""
    found = []
    for kind in ("pods", "services", "configmaps"):
        listed = request(
            kube_admin, "GET", f"/api/v1/namespaces/{namespace}/{kind}",
            params={"labelSelector": "spark-app-selector"},
        )  # fmt: skip
        found += [f"{kind}/{item['metadata']['name']}" for item in listed["items"]]
    return found


async def test_submits_follows_and_ends_the_task_with_its_xcoms(
    conn_id: str, namespace: str, kube_admin: Any
) -> None:
    trigger = make_trigger(conn_id, namespace)
    event = await run_to_end(trigger)
    assert isinstance(event, TaskSuccessEvent), event
    xcoms: dict[str, Any] = trigger.task_instance.xcom  # type: ignore[union-attr]
    returned = xcoms[RETURN_VALUE_KEY]
    assert (returned["status"], returned["state"], returned["exit_code"]) == (
        "success",
        "succeeded",
        0,
    )
    assert returned["namespace"] == namespace and returned["adopted"] is False
    application = xcoms[APPLICATION_XCOM_KEY]
    assert application["application_id"] == returned["application_id"]
    assert application["spark_version"] == "4.0.1"
    # on_finish_action's default deletes a succeeded driver.
    wait_for_pod_gone(kube_admin, namespace, application["driver_pod"], 30)


async def test_a_submission_refused_half_way_leaves_nothing_and_is_retried(
    conn_id: str, namespace: str, kube_admin: Any
) -> None:
    """A ResourceQuota with room for no more ConfigMaps refuses the submission's last
    object, after its driver pod and Service: the task run's rollback removes them."""
    quotas = f"/api/v1/namespaces/{namespace}/resourcequotas"
    quota = {"metadata": {"name": QUOTA}, "spec": {"hard": {"count/configmaps": "1"}}}
    request(kube_admin, "POST", quotas, quota)

    def counted() -> bool:
        status = request(kube_admin, "GET", f"{quotas}/{QUOTA}").get("status") or {}
        return (status.get("used") or {}).get("count/configmaps") == "1"

    wait_for(counted, 30, "the quota's usage counted (kube-root-ca.crt)")
    event = await run_to_end(make_trigger(conn_id, namespace))
    # Infrastructure: Airflow retries it while the task has tries left.
    assert isinstance(event, TaskFailedEvent), event
    wait_for(lambda: spark_objects(kube_admin, namespace) == [], 30, "nothing left")
