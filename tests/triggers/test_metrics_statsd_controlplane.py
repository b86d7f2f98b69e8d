"""The provider's metrics end to end: KWOK drivers followed by the real trigger and its
shared store, sent by Airflow's own StatsD client (configured through `[metrics]`) to
Prometheus' statsd_exporter, and read back from its /metrics. Values are checked against the
timestamps the API server holds for the same pods."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.submission_plan import KubernetesParameters
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.services.task.task_submission import TaskSubmission, adopt_or_submit
from airflow_provider_sparkk8s.submission.naming import new_submission_ids
from testenv.harness.kube import request
from testenv.harness.pods import (
    EXIT_CODE,
    HOLD,
    REASON,
    RUN_MS,
    create,
    get_pod,
    new_app_id,
    spark_pod,
)
from testenv.harness.waiting import wait_for
from testenv.statsd_exporter import StatsdExporter
from tests.support.statsd import airflow_statsd, statsd_exporter  # noqa: F401
from tests.triggers.spark_pods import connection_for, final_event, make_trigger

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

DAG, TASK = "metrics_dag", "spark_task"


def seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


def sample(exporter: StatsdExporter, name: str, **labels: str) -> float | None:
    """The value of the one sample named `name` with exactly these labels, or None."""
    return exporter.samples().get((name, frozenset(labels.items())))


def container_state(pod: dict[str, Any], container: str) -> dict[str, Any]:
    for status in pod["status"]["containerStatuses"]:
        if status["name"] == container:
            return status["state"]
    raise AssertionError(f"no status for {container}")


def with_task(trigger: Any) -> Any:
    """What the triggerer does before it runs a trigger: it sets its task instance."""
    ti: Any = SimpleNamespace(dag_id=DAG, task_id=TASK)
    trigger.task_instance = ti
    return trigger


async def test_a_followed_run_reports_its_timings_failures_and_the_stores_gauge(
    airflow_statsd: StatsdExporter,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    kubeconfig: Any,
    namespace: str,
    kube_admin: Any,
):
    exporter = airflow_statsd
    conn_id = connection_for(monkeypatch, kubeconfig)
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("m-driver", app, annotations={HOLD: "true"}))
    create(
        kube_admin,
        namespace,
        spark_pod(
            "m-exec-1",
            app,
            role="executor",
            annotations={RUN_MS: "300", EXIT_CODE: "137", REASON: "OOMKilled"},
        ),
    )
    trigger = with_task(make_trigger(conn_id, namespace, app, "m-driver", resync_interval=1.0))
    follow = asyncio.create_task(final_event(trigger, timeout=90))
    tags = {"namespace": namespace, "dag_id": DAG, "task_id": TASK}

    # The store's gauge while the driver is held Running, sent on each resync round.
    def running_gauge() -> bool:
        return (
            sample(
                exporter,
                "airflow_sparkk8s_store_applications",
                namespace=namespace,
                state="running",
            )
            == 1.0
        )

    await asyncio.to_thread(wait_for, running_gauge, 30, "the store's running gauge")
    await asyncio.to_thread(
        wait_for,
        lambda: (
            sample(exporter, "airflow_sparkk8s_executor_failures", **tags, reason="OOMKilled")
            == 1.0
        ),
        30,
        "the executor's failure",
    )
    await asyncio.to_thread(
        request,
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/m-driver",
        {"metadata": {"annotations": {HOLD: "false"}}},
        content_type="application/merge-patch+json",
    )
    payload = await follow
    assert payload["status"] == "success"

    driver = get_pod(kube_admin, namespace, "m-driver")
    assert driver is not None
    created = seconds(driver["metadata"]["creationTimestamp"])
    terminated = container_state(driver, "spark-kubernetes-driver")["terminated"]
    expected_running = seconds(terminated["startedAt"]) - created
    expected_duration = seconds(terminated["finishedAt"]) - created

    def timings_arrived() -> bool:
        return (
            sample(
                exporter, "airflow_sparkk8s_application_duration_count", **tags, state="succeeded"
            )
            == 1.0
            and sample(exporter, "airflow_sparkk8s_driver_time_to_running_count", **tags) == 1.0
        )

    await asyncio.to_thread(wait_for, timings_arrived, 30, "the run's timings")
    running = sample(exporter, "airflow_sparkk8s_driver_time_to_running_sum", **tags)
    duration = sample(
        exporter, "airflow_sparkk8s_application_duration_sum", **tags, state="succeeded"
    )
    assert running is not None and duration is not None
    assert running == pytest.approx(expected_running, abs=0.01)
    assert duration == pytest.approx(expected_duration, abs=0.01)
    assert duration >= running
    # Not queued by Kueue: no queue wait for this namespace.
    queued = exporter.samples("airflow_sparkk8s_driver_queue_wait")
    assert [labels for _, labels in queued if ("namespace", namespace) in labels] == []


async def test_a_driver_nothing_can_schedule_counts_its_pending_reason(
    airflow_statsd: StatsdExporter,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    kubeconfig: Any,
    namespace: str,
    kube_admin: Any,
):
    exporter = airflow_statsd
    conn_id = connection_for(monkeypatch, kubeconfig)
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("p-driver", app, node_selector={"no-such": "node"}))
    trigger = with_task(make_trigger(conn_id, namespace, app, "p-driver", startup_timeout=4))
    payload = await final_event(trigger)
    assert (payload["status"], payload["reason"]) == ("timeout", "StartupTimeout")
    scheduled = get_pod(kube_admin, namespace, "p-driver")
    assert scheduled is not None
    reason = next(
        c["reason"] for c in scheduled["status"]["conditions"] if c["type"] == "PodScheduled"
    )
    tags = {"namespace": namespace, "dag_id": DAG, "task_id": TASK}
    await asyncio.to_thread(
        wait_for,
        lambda: sample(exporter, "airflow_sparkk8s_driver_pending", **tags, reason=reason) == 1.0,
        30,
        f"the pending reason {reason}",
    )
    # It never ran: no time to Running, no duration.
    for name, labels in exporter.samples("airflow_sparkk8s_driver_time_to_running"):
        assert dict(labels).get("namespace") != namespace, name


def test_a_submission_through_the_operators_path_reports_its_latency(
    airflow_statsd: StatsdExporter,  # noqa: F811
    kubeconfig: Any,
    namespace: str,
    kube_admin: Any,
    control_plane: Any,
):
    """The operator's own submission path (adopt or submit, then the submission service),
    as its worker runs it, against the API server; KWOK runs the driver."""
    exporter = airflow_statsd
    ref = TaskInstanceRef(DAG, "submitted", "manual__2026-12-01")
    argv = ["--master", f"k8s://{control_plane.server}", "--deploy-mode", "cluster",
            "--name", "latency", "--class", "org.apache.spark.examples.SparkPi",
            "local:///opt/spark/examples/jars/spark-examples.jar"]  # fmt: skip
    task = TaskSubmission(
        ref=ref,
        arguments=submission.parse(submission.SubmissionRequest(argv, {}, "/")),
        kubernetes=KubernetesParameters(namespace=namespace, image="apache/spark:4.0.1"),
        spark_version="4.0.1",
        environ={},
        ids=new_submission_ids(),
    )
    pods = DriverPods(KubeClient(kubeconfig_settings(str(kubeconfig))), owns_client=True)
    with pods:
        before = time.time()
        started = time.monotonic()
        app = adopt_or_submit(
            pods,
            task,
            task.plan(1),
            list,
            reattach=True,
            storage_for=lambda path, props: Storage.from_spark_conf(props),
            log=logging.getLogger("test"),
            metrics=airflow_metrics(),
        )
        wall = time.monotonic() - started
    tags = {"namespace": namespace, "dag_id": DAG, "task_id": "submitted"}
    count = wait_for(
        lambda: sample(exporter, "airflow_sparkk8s_submit_latency_count", **tags),
        30,
        "the submit latency",
    )
    assert count == 1.0
    latency = sample(exporter, "airflow_sparkk8s_submit_latency_sum", **tags)
    assert latency is not None and 0 < latency <= wall
    # The API server stamped the driver's creation within the measured submission (its
    # timestamps have one-second resolution).
    driver = get_pod(kube_admin, namespace, app.driver_pod)
    assert driver is not None
    created = seconds(driver["metadata"]["creationTimestamp"])
    assert int(before) <= created <= before + latency + 1
