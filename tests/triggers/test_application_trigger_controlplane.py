"""The trigger on the real control plane, with KWOK moving the pods."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.outcome import report
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from testenv.harness.kube import request
from testenv.harness.pods import (
    EXIT_CODE,
    HOLD,
    MESSAGE,
    MISSING_IMAGE,
    REASON,
    RUN_MS,
    UNPULLABLE_IMAGE,
    create,
    get_pod,
    new_app_id,
    phase,
    spark_pod,
    wait_for_pod,
)
from testenv.harness.waiting import wait_for
from tests.support.kills import answered
from tests.triggers.spark_pods import connection_for, final_event, make_trigger

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]


@pytest.fixture
def conn_id(monkeypatch, kubeconfig):
    return connection_for(monkeypatch, kubeconfig)


async def test_follows_a_driver_to_success(conn_id, namespace, kube_admin):
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("ok-driver", app, annotations={RUN_MS: "1500"}))
    create(
        kube_admin,
        namespace,
        spark_pod("ok-exec-1", app, role="executor", annotations={RUN_MS: "60000"}),
    )
    trigger = make_trigger(conn_id, namespace, app, "ok-driver")
    payload = await final_event(trigger)
    assert (payload["status"], payload["state"], payload["exit_code"]) == (
        "success",
        "succeeded",
        0,
    )
    assert payload["driver_pod"] == "ok-driver"
    assert sum(payload["executors"]["counts"].values()) == 1
    assert phase(get_pod(kube_admin, namespace, "ok-driver")) == "Succeeded"


async def test_follows_a_driver_to_failure_with_exit_code_and_reason(
    conn_id, namespace, kube_admin
):
    app = new_app_id()
    create(
        kube_admin,
        namespace,
        spark_pod(
            "bad-driver",
            app,
            annotations={
                RUN_MS: "1000",
                EXIT_CODE: "3",
                REASON: "Error",
                MESSAGE: "Job aborted: stage 2",
            },
        ),
    )
    create(
        kube_admin,
        namespace,
        spark_pod(
            "bad-exec-1",
            app,
            role="executor",
            annotations={RUN_MS: "500", EXIT_CODE: "137", REASON: "OOMKilled"},
        ),
    )
    payload = await final_event(make_trigger(conn_id, namespace, app, "bad-driver"))
    assert (payload["status"], payload["reason"], payload["exit_code"]) == ("failed", "Error", 3)
    assert payload["termination_message"] == "Job aborted: stage 2"
    # the executor may or may not have finished when the driver did; if it did, it is named
    for failure in payload["executors"]["failures"]:
        assert (failure["pod_name"], failure["reason"], failure["exit_code"]) == (
            "bad-exec-1",
            "OOMKilled",
            137,
        )


async def test_image_pull_backoff_ends_in_a_startup_timeout_naming_it(
    conn_id, namespace, kube_admin
):
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("pull-driver", app, image=UNPULLABLE_IMAGE))
    started = time.monotonic()
    payload = await final_event(
        make_trigger(conn_id, namespace, app, "pull-driver", startup_timeout=8)
    )
    assert (payload["status"], payload["reason"]) == ("timeout", "StartupTimeout")
    assert "ImagePullBackOff" in payload["message"] or "ErrImagePull" in payload["message"]
    assert "i/o timeout" in payload["message"]  # a transient answer: waited, as before
    assert time.monotonic() - started >= 7


async def test_an_image_its_registry_says_does_not_exist_ends_at_the_first_pull(
    conn_id, namespace, kube_admin
):
    app = new_app_id()
    started = time.monotonic()
    create(kube_admin, namespace, spark_pod("gone-driver", app, image=MISSING_IMAGE))
    payload = await final_event(
        make_trigger(conn_id, namespace, app, "gone-driver", startup_timeout=600)
    )
    took = time.monotonic() - started
    assert (payload["status"], payload["state"], payload["reason"]) == (
        "failed",
        "failed",
        "ImageNotFound",
    )
    assert payload["message"].startswith(
        f'image "{MISSING_IMAGE}" of container spark-kubernetes-driver does not exist'
    )
    assert payload["message"].endswith(f"{MISSING_IMAGE}: not found")
    assert took < 10, took  # KWOK's ErrImagePull comes 0.2 s after the pod starts
    outcome = report(
        TrackedApplication(app, namespace, "gone-driver", "spark-kubernetes-driver", ""),
        payload,
        datetime.now(UTC),
    )
    assert outcome.kind == "configuration_error"


async def test_unschedulable_ends_in_a_startup_timeout_with_the_scheduler_message(
    conn_id, namespace, kube_admin
):
    app = new_app_id()
    create(
        kube_admin, namespace, spark_pod("nowhere-driver", app, node_selector={"no-such": "node"})
    )
    payload = await final_event(
        make_trigger(conn_id, namespace, app, "nowhere-driver", startup_timeout=6)
    )
    assert (payload["status"], payload["reason"]) == ("timeout", "StartupTimeout")
    assert "Unschedulable" in payload["message"]
    assert "node" in payload["message"]  # the scheduler's own words: "0/3 nodes are available: ..."


async def test_a_new_instance_after_the_pod_finished_still_reports(conn_id, namespace, kube_admin):
    app = new_app_id()
    create(
        kube_admin,
        namespace,
        spark_pod("late-driver", app, annotations={RUN_MS: "300", EXIT_CODE: "2"}),
    )
    first = make_trigger(
        conn_id, namespace, app, "late-driver", run_timeout=600, start_time=time.time()
    )
    wait_for_pod(kube_admin, namespace, "late-driver", lambda p: phase(p) == "Failed", 60, "Failed")
    restarted = SparkK8sApplicationTrigger(**first.serialize()[1])
    payload = await final_event(restarted)
    assert (payload["status"], payload["exit_code"]) == ("failed", 2)


async def following_a_running_driver(
    conn_id: str, namespace: str, kube_admin: Any, name: str
) -> tuple[str, asyncio.Task[dict[str, Any]]]:
    """A held driver Running (its application id), and a task awaiting its trigger's final
    event once the trigger has seen it running."""
    app = new_app_id()
    create(kube_admin, namespace, spark_pod(name, app, annotations={HOLD: "true"}))
    wait_for_pod(kube_admin, namespace, name, lambda p: phase(p) == "Running", 60, "Running")
    trigger = make_trigger(conn_id, namespace, app, name)
    task = asyncio.create_task(final_event(trigger))
    deadline = time.monotonic() + 30
    while trigger.last_state is None or trigger.last_state.state != "running":
        assert time.monotonic() < deadline, "trigger never saw the running driver"
        await asyncio.sleep(0.05)
    return app, task


async def test_driver_deleted_meanwhile_is_a_failure(conn_id, namespace, kube_admin):
    _, task = await following_a_running_driver(conn_id, namespace, kube_admin, "held-driver")
    await asyncio.to_thread(
        request, kube_admin, "DELETE", f"/api/v1/namespaces/{namespace}/pods/held-driver"
    )
    payload = await task
    assert (payload["status"], payload["reason"]) == ("failed", "DriverPodNotFound")


async def test_an_evicted_driver_ends_as_infrastructure_saying_eviction(
    conn_id, namespace, kube_admin
):
    """The Eviction API marks the running driver (DisruptionTarget) and deletes it; KWOK
    removes it at once. The final event, and the XCom made from it, say it was evicted."""
    app, task = await following_a_running_driver(conn_id, namespace, kube_admin, "evicted-driver")
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evicted-driver"},
    }
    await asyncio.to_thread(
        request,
        kube_admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/evicted-driver/eviction",
        eviction,
    )
    payload = await task
    assert (payload["status"], payload["reason"], payload["disruption"]) == (
        "failed",
        "EvictionByEvictionAPI",
        "EvictionByEvictionAPI",
    )
    tracked = TrackedApplication(app, namespace, "evicted-driver", "spark-kubernetes-driver", "")
    outcome = report(tracked, payload, datetime.now(UTC))
    assert (outcome.xcom["reason"], outcome.xcom["cause"]) == (
        "infrastructure",
        "EvictionByEvictionAPI",
    )
    assert "driver pod evicted-driver was evicted through the Eviction API" in str(
        outcome.exception()
    )


async def test_a_driver_gone_before_the_trigger_started_is_a_failure(conn_id, namespace):
    payload = await final_event(make_trigger(conn_id, namespace, new_app_id(), "never-was-driver"))
    assert (payload["status"], payload["reason"]) == ("failed", "DriverPodNotFound")


async def test_on_kill_deletes_the_driver(conn_id, namespace, kube_admin):
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("kill-driver", app, annotations={HOLD: "true"}))
    await answered(make_trigger(conn_id, namespace, app, "kill-driver")).on_kill()

    def deleted_or_deleting():
        pod = get_pod(kube_admin, namespace, "kill-driver")
        return pod is None or bool(pod["metadata"].get("deletionTimestamp"))

    await asyncio.to_thread(wait_for, deleted_or_deleting, 30, "the driver to be deleted")
