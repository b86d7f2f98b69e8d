"""Kueue admission against the real API server and Kueue's real manager (v0.17.0), with KWOK
nodes: a ClusterQueue with room for one application at a time.

Submissions go through sparkk8s-submit (`--conf spark.kubernetes.kueue.queueName=...`,
without waiting, unless a test follows with the CLI). KWOK does not run Spark, so where
Spark's driver would create executors the test creates them as the driver does: owned by the
driver pod, labelled as executors. The trigger follows a queued application as it would in
the triggerer (its connection reads the test kubeconfig).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.monitoring.kueue_workload import epoch, queue_status
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from airflow_provider_sparkk8s.monitoring.snapshot import slim_pod
from airflow_provider_sparkk8s.submission.kueue import QUEUE_NAME_KEY, QUEUE_TIMEOUT_KEY
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.harness.waiting import until, wait_for
from testenv.kueue import API, KueueManager
from tests.submission.test_submit_controlplane import cli, submit_argv
from tests.support.kueue import KueueNamespace, kueue_manager, kueue_namespace  # noqa: F401
from tests.triggers.spark_pods import connection_for, final_event, make_trigger

pytestmark = pytest.mark.controlplane

GATE = "kueue.x-k8s.io/admission"
# Driver 1 cpu + 1408Mi, two executors of 1 cpu + 1408Mi: 3 cpu, 4224Mi. Room for one.
QUOTA = {"cpu": "3", "memory": "6Gi"}


def held_conf(queue: KueueNamespace) -> dict[str, str]:
    """A held (running until released) application with two executors, through `queue`."""
    return {
        QUEUE_NAME_KEY: queue.local_queue,
        "spark.executor.instances": "2",
        "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
    }


def submit(plane: ControlPlane, queue: KueueNamespace, kubeconfig: Path, name: str) -> str:
    """sparkk8s-submit of a held application, without waiting; its app id."""
    conf = {**held_conf(queue), "spark.kubernetes.submission.waitAppCompletion": "false"}
    argv = submit_argv(
        plane.server, queue.name, conf, ["--name", name, "--class", "M", "local:///a.jar"]
    )
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 0, err
    return driver_of(plane_admin(plane), queue.name, name)["metadata"]["labels"][
        "spark-app-selector"
    ]


def plane_admin(plane: ControlPlane) -> AdminHttp:
    return AdminHttp.from_kubeconfig(plane.admin_kubeconfig)


def pods(admin: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}"
    return list(admin.json("GET", path)["items"])


def driver_of(admin: Any, namespace: str, name: str) -> dict[str, Any]:
    drivers = [
        p
        for p in pods(admin, namespace, "spark-role%3Ddriver")
        if p["metadata"]["name"].startswith(f"{name}-")
    ]
    assert len(drivers) == 1, [p["metadata"]["name"] for p in drivers]
    return drivers[0]


def workload(admin: Any, namespace: str, name: str) -> dict[str, Any] | None:
    status, body = admin.raw("GET", f"{API}/namespaces/{namespace}/workloads/{name}")
    if status == 404:
        return None
    return dict(json.loads(body))


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for entry in ((obj or {}).get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return dict(entry)
    return None


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found["status"] == "True"


def running_ungated(admin: Any, namespace: str, name: str) -> bool:
    pod = admin.json("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return pod["status"].get("phase") == "Running" and not pod["spec"].get("schedulingGates")


def create_executors(admin: Any, driver: dict[str, Any], count: int) -> list[str]:
    """Executor pods as Spark's driver creates them: owned by the driver (controller)."""
    metadata = driver["metadata"]
    app_id = metadata["labels"]["spark-app-selector"]
    owner = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
    }
    names = []
    for number in range(1, count + 1):
        name = f"{app_id}-exec-{number}"
        body = {
            "metadata": {
                "name": name,
                "labels": {"spark-app-selector": app_id, "spark-role": "executor"},
                "annotations": {"kwok.sparkk8s.io/hold": "true"},
                "ownerReferences": [owner],
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "spark-kubernetes-executor",
                        "image": "apache/spark:4.0.0",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1408Mi"},
                            "limits": {"memory": "1408Mi"},
                        },
                    }
                ],
            },
        }
        admin.json("POST", f"/api/v1/namespaces/{metadata['namespace']}/pods", body)
        names.append(name)
    return names


def release(admin: Any, namespace: str, name: str) -> None:
    """End a held pod: KWOK lets it succeed."""
    admin.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        json={"metadata": {"annotations": {"kwok.sparkk8s.io/hold": None}}},
        content_type="application/merge-patch+json",
    )


def test_the_second_application_waits_gated_until_the_first_ends(
    control_plane: ControlPlane,
    kueue_manager: KueueManager,  # noqa: F811
    kueue_namespace,  # noqa: F811
    kubeconfig: Path,
) -> None:
    queue = kueue_namespace(QUOTA)
    admin = plane_admin(control_plane)
    ns = queue.name

    first = submit(control_plane, queue, kubeconfig, "first")
    name = admitted_running(admin, ns, "first")
    first_driver = admin.json("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    admitted = workload(admin, ns, first)
    assert is_true(admitted, "Admitted"), admitted
    assert admitted is not None
    assert admitted["status"]["admission"]["clusterQueue"] == queue.cluster_queue
    # Kueue made the driver pod the Workload's owner: the garbage collector takes it along.
    assert [o["uid"] for o in admitted["metadata"]["ownerReferences"]] == [
        first_driver["metadata"]["uid"]
    ]
    driver_set, executor_set = admitted["spec"]["podSets"]
    stored = admin.json("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    assert (
        driver_set["template"]["spec"]["containers"][-1]["resources"]["requests"]
        == stored["spec"]["containers"][-1]["resources"]["requests"]
    )
    assert executor_set["count"] == 2
    assert executor_set["template"]["spec"]["containers"][-1]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1408Mi",
    }
    executors = create_executors(admin, stored, 2)
    wait_for(
        lambda: all(running_ungated(admin, ns, executor) for executor in executors),
        60,
        "the executors Running without a gate (the driver's children, inside its reservation)",
    )

    second = submit(control_plane, queue, kubeconfig, "second")
    second_name = driver_of(admin, ns, "second")["metadata"]["name"]

    def second_queued() -> dict[str, Any] | None:
        found = workload(admin, ns, second)
        reserved = condition(found, "QuotaReserved")
        if reserved and reserved["status"] == "False" and reserved["reason"] == "Pending":
            return found
        return None

    queued = wait_for(second_queued, 60, "the second Workload pending for quota")
    assert "insufficient unused quota" in condition(queued, "QuotaReserved")["message"]  # type: ignore[index]
    status = queue_status(queued, queue.cluster_queue)
    assert status is not None and status.startswith(f"queued in ClusterQueue {queue.cluster_queue}")
    assert "insufficient unused quota" in status
    pending = admin.json("GET", f"/api/v1/namespaces/{ns}/pods/{second_name}")
    assert GATE in [g["name"] for g in pending["spec"].get("schedulingGates") or []]
    # What the trigger, the sensor and the CLI report of it (the follower's reducer).
    reported = reduce_application([slim_pod(pending)])
    assert (reported.state, reported.reason) == ("pending", "QueuedByKueue")
    assert f"LocalQueue {queue.local_queue}" in (reported.message or "")
    assert pending["status"].get("phase") == "Pending" and not pending["spec"].get("nodeName")

    # The first ends as Spark ends: executors go first, then the driver exits.
    for executor in executors:
        admin.raw("DELETE", f"/api/v1/namespaces/{ns}/pods/{executor}")
    release(admin, ns, name)
    wait_for(lambda: is_true(workload(admin, ns, first), "Finished"), 60, "first Workload Finished")
    try:
        wait_for(lambda: running_ungated(admin, ns, second_name), 120, "the second driver Running")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{kueue_manager.log_lines(second)}") from None
    assert is_true(workload(admin, ns, second), "Admitted")
    assert queue_status(workload(admin, ns, second), queue.cluster_queue) is None


def test_a_kill_while_queued_leaves_no_pod_and_no_workload(
    control_plane: ControlPlane,
    kueue_manager: KueueManager,  # noqa: F811
    kueue_namespace,  # noqa: F811
    kubeconfig: Path,
) -> None:
    queue = kueue_namespace(QUOTA)
    admin = plane_admin(control_plane)
    ns = queue.name
    holder = submit(control_plane, queue, kubeconfig, "holder")
    waiting = submit(control_plane, queue, kubeconfig, "waiting")
    wait_for(
        lambda: condition(workload(admin, ns, waiting), "QuotaReserved"),
        60,
        "Kueue to consider the second Workload",
    )
    assert not is_true(workload(admin, ns, waiting), "QuotaReserved")

    base = ["--master", f"k8s://{control_plane.server}"]
    outcome, out, _ = cli([*base, "--kill", f"{ns}:waiting-*"], kubeconfig)
    assert outcome.exit_code == 0 and out.count("Deleting driver pod") == 1

    def nothing_of_waiting_left() -> bool:
        left = pods(admin, ns, f"spark-app-selector%3D{waiting}")
        return not left and workload(admin, ns, waiting) is None

    wait_for(nothing_of_waiting_left, 60, "0 pods and 0 Workloads of the killed application")
    assert workload(admin, ns, holder) is not None  # the other one is untouched
    outcome, _, _ = cli([*base, "--kill", f"{ns}:holder-*"], kubeconfig)
    assert outcome.exit_code == 0

    def namespace_empty() -> bool:
        return not pods(admin, ns, "spark-role") and not kueue_manager.workloads(ns)

    wait_for(namespace_empty, 60, "0 pods and 0 Workloads in the namespace")


def admitted_running(admin: Any, namespace: str, app_name: str) -> str:
    """Wait until the driver of `app_name` is admitted and Running; its pod name."""
    name = str(driver_of(admin, namespace, app_name)["metadata"]["name"])
    wait_for(lambda: running_ungated(admin, namespace, name), 60, f"{app_name} admitted, Running")
    return name


def test_past_its_queue_timeout_the_cli_deletes_the_queued_driver_and_its_workload(
    control_plane: ControlPlane,
    kueue_manager: KueueManager,  # noqa: F811
    kueue_namespace,  # noqa: F811
    kubeconfig: Path,
) -> None:
    queue = kueue_namespace(QUOTA)
    admin = plane_admin(control_plane)
    ns = queue.name
    submit(control_plane, queue, kubeconfig, "holder")
    admitted_running(admin, ns, "holder")

    conf = {**held_conf(queue), QUEUE_TIMEOUT_KEY: "8s"}
    argv = submit_argv(
        control_plane.server, ns, conf, ["--name", "impatient", "--class", "M", "local:///a.jar"]
    )
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 4, err  # infrastructure: a later try may find room
    # While queued, the CLI named the ClusterQueue and Kueue's own reason.
    assert (
        f"pending, QueuedByKueue: queued in ClusterQueue {queue.cluster_queue}: couldn't assign "
        "flavors to pod set driver: insufficient unused quota" in err
    ), err
    assert "failed, QueueTimeout: the application stayed queued in Kueue for more than 8s" in err
    assert "Failure kind: infrastructure" in err
    found = re.search(r"with application ID (spark-[0-9a-f]+)", err)
    assert found is not None, err
    app_id = found.group(1)

    def nothing_left() -> bool:
        left = pods(admin, ns, f"spark-app-selector%3D{app_id}")
        return not left and workload(admin, ns, app_id) is None

    wait_for(nothing_left, 30, "0 pods and 0 Workloads of the timed-out application")


async def test_the_trigger_names_the_cluster_queue_and_reports_the_seconds_queued(
    control_plane: ControlPlane,
    kueue_manager: KueueManager,  # noqa: F811
    kueue_namespace,  # noqa: F811
    kubeconfig: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue = kueue_namespace(QUOTA)
    admin = plane_admin(control_plane)
    ns = queue.name
    conn_id = connection_for(monkeypatch, kubeconfig)
    # The first connection read in a process imports much of Airflow: done before the clock
    # of the startup timeout starts, as in a running triggerer.
    await (await SparkK8sHook(conn_id, ns).get_async_client()).aclose()
    submit(control_plane, queue, kubeconfig, "holder")
    holder = admitted_running(admin, ns, "holder")
    app_id = submit(control_plane, queue, kubeconfig, "patient")
    driver = driver_of(admin, ns, "patient")
    name = driver["metadata"]["name"]
    created = epoch(driver["metadata"]["creationTimestamp"])
    assert created is not None
    # A startup timeout below the time it stays queued: queued time must not count. (Not
    # shorter: before its first look the trigger cannot know the driver is queued.)
    startup_timeout = 10.0
    trigger = make_trigger(
        conn_id,
        ns,
        app_id,
        name,
        startup_timeout=startup_timeout,
        queue_timeout=300.0,
        start_time=created,
    )
    following = asyncio.ensure_future(final_event(trigger, 120))

    def named() -> str | None:
        message = (trigger.last_state.message if trigger.last_state else None) or ""
        return message if f"ClusterQueue {queue.cluster_queue}:" in message else None

    message = await until(named, 30, "the trigger's state naming the ClusterQueue")
    assert message.startswith(f"queued in ClusterQueue {queue.cluster_queue}: couldn't assign")
    assert "insufficient unused quota" in message
    # Queued for longer than the startup timeout, and still followed.
    await until(lambda: time.time() - created > startup_timeout + 2, 30, "queued past startup")
    assert not following.done()
    assert trigger.last_state is not None and trigger.last_state.reason == "QueuedByKueue"

    release(admin, ns, holder)  # the first ends: the second is admitted, then runs
    await until(
        lambda: trigger.last_state is not None and trigger.last_state.state == "running",
        60,
        "the patient driver running",
    )
    admitted = workload(admin, ns, app_id)
    release(admin, ns, name)
    payload = await following
    assert (payload["status"], payload["reason"]) == ("success", "Completed"), payload
    admitted_at = epoch((condition(admitted, "Admitted") or {}).get("lastTransitionTime"))
    assert admitted_at is not None, admitted
    assert payload["queued_seconds"] == pytest.approx(admitted_at - created, abs=1.0)
    assert payload["queued_seconds"] > startup_timeout
