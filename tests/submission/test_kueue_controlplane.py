"""Kueue admission against the real API server and Kueue's real manager (v0.17.0), with KWOK
nodes: a ClusterQueue with room for one application at a time.

Submissions go through sparkk8s-submit (`--conf spark.kubernetes.kueue.queueName=...`,
without waiting). KWOK does not run Spark, so where Spark's driver would create executors
the test creates them as the driver does: owned by the driver pod, labelled as executors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.monitoring.kueue_workload import queue_status
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from airflow_provider_sparkk8s.monitoring.snapshot import slim_pod
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.harness.waiting import wait_for
from testenv.kueue import API, KueueManager
from tests.submission.test_submit_controlplane import cli, submit_argv
from tests.support.kueue import KueueNamespace, kueue_manager, kueue_namespace  # noqa: F401

pytestmark = pytest.mark.controlplane

GATE = "kueue.x-k8s.io/admission"
# Driver 1 cpu + 1408Mi, two executors of 1 cpu + 1408Mi: 3 cpu, 4224Mi. Room for one.
QUOTA = {"cpu": "3", "memory": "6Gi"}


def submit(plane: ControlPlane, queue: KueueNamespace, kubeconfig: Path, name: str) -> str:
    """sparkk8s-submit of a held (running until released) application; its app id."""
    conf = {
        "spark.kubernetes.kueue.queueName": queue.local_queue,
        "spark.executor.instances": "2",
        "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
        "spark.kubernetes.submission.waitAppCompletion": "false",
    }
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
    first_driver = driver_of(admin, ns, "first")
    name = first_driver["metadata"]["name"]
    wait_for(lambda: running_ungated(admin, ns, name), 60, "the first driver admitted and Running")
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
