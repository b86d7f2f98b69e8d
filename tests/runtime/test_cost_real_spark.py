"""The cost per task on a real Spark run with dynamic allocation: real Spark 4.3 on the real
node starts executors for a first job, removes them once idle, and starts new ones for a
second job. The trigger (over the shared store) and the operator's worker-side wait (the
sync watch) follow it at once, and each reports core-seconds and GiB-seconds that match
the pods' own timestamps within one second per pod, and the same peak. Every executor pod
of the namespace is found by the task's label selector. Submitted through the operator's
own path (`TaskSubmission.plan` -> the submission service), as the documented submitter."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.follower import FollowSpec
from airflow_provider_sparkk8s.application.task.submission_plan import KubernetesParameters
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef, pods_selector
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.following.follow_runs import follow_application
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.services.task.task_submission import TaskSubmission
from airflow_provider_sparkk8s.submission.naming import new_submission_ids
from testenv.controlplane import ControlPlane
from testenv.harness.waiting import wait_for
from testenv.real_spark import (
    BASE_CONF,
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    PodRecorder,
    host_folder_conf,
)
from tests.triggers.spark_pods import connection_for, final_event, make_trigger

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

# Two jobs, and between them an idle wait until dynamic allocation has removed every
# executor: the second job's executor is a new pod. One executor at a time (a small JVM
# less on a 2-core runner); a peak of several is the unit tests' and the KWOK test's.
PROGRAM = """\
import time

from pyspark import SparkContext


def executors(sc):
    return sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver's


def slow(x):
    time.sleep(1)
    return x


sc = SparkContext.getOrCreate()
try:
    print("first job:", sum(sc.parallelize(range(4), 4).map(slow).collect()), flush=True)
    deadline = time.time() + 120
    while executors(sc) and time.time() < deadline:
        time.sleep(0.5)
    print("executors while idle:", executors(sc), flush=True)
    print("second job:", sum(sc.parallelize(range(4), 4).map(slow).collect()), flush=True)
finally:
    sc.stop()
"""
DYNAMIC = {
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",
    "spark.dynamicAllocation.minExecutors": "0",
    "spark.dynamicAllocation.initialExecutors": "1",
    "spark.dynamicAllocation.maxExecutors": "1",
    "spark.dynamicAllocation.executorIdleTimeout": "2s",
    "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
    "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout": "1s",
}


class Log:
    def info(self, msg: str, *args: object) -> None:
        print(msg % args)

    warning = info


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def request_cores(cpu: str) -> float:
    """A pod's cpu request in cores (`200m` -> 0.2), read here on our own."""
    return float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)


def own_figures(pod: dict[str, Any]) -> tuple[float, float, float, float]:
    """(cores, GiB, started, finished) from the pod's own spec and its last status: its
    container's terminated state (a pod Spark deleted before it started ran for 0 s)."""
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    memory = requests["memory"]
    assert memory.endswith("Mi"), requests
    statuses = pod["status"].get("containerStatuses") or [{}]
    terminated = (statuses[0].get("state") or {}).get("terminated") or {}
    if not terminated.get("startedAt"):
        assert "running" not in (statuses[0].get("state") or {}), pod["status"]
        return request_cores(requests["cpu"]), int(memory[:-2]) / 1024, 0.0, 0.0
    return (
        request_cores(requests["cpu"]),
        int(memory[:-2]) / 1024,
        epoch(terminated["startedAt"]),
        epoch(terminated["finishedAt"]),
    )


def in_thread(work: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """Runs `work` in a thread now; the returned call waits for its result."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting test
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def wait() -> dict[str, Any]:
        thread.join(480)
        if "error" in result:
            raise result["error"]
        return dict(result["value"])

    return wait


def test_dynamic_executors_cost_what_their_own_timestamps_say_in_the_trigger_and_the_worker(
    real_plane: ControlPlane,
    real_namespace: str,
    real_submitter: Path,
    real_shared_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ns, submitter, shared_dir = real_namespace, real_submitter, real_shared_dir
    ref = TaskInstanceRef("cost_dag", "dynamic", "manual__2026-12-01", map_index=-1)
    program = tmp_path / "dynamic.py"
    program.write_text(PROGRAM)
    conf = {k: v for k, v in BASE_CONF.items() if k != "spark.executor.instances"}
    conf |= DYNAMIC | SMALL_PODS | {"spark.kubernetes.file.upload.path": f"file://{shared_dir}"}
    conf |= host_folder_conf(shared_dir, ("driver",))  # the driver reads the upload there
    argv = ["--master", f"k8s://{real_plane.server}", "--deploy-mode", "cluster",
            "--name", "dynamic"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    request = submission.SubmissionRequest([*argv, str(program)], os.environ, "/")
    task = TaskSubmission(
        ref=ref,
        arguments=submission.parse(request),
        kubernetes=KubernetesParameters(namespace=ns),
        spark_version="4.3.0",
        environ={},
        ids=new_submission_ids(),
    )
    everything = PodRecorder(real_plane, ns).start()
    selected = PodRecorder(real_plane, ns, label_selector=pods_selector(ref)).start()
    conn_id = connection_for(monkeypatch, submitter)
    started = time.monotonic()
    client = KubeClient(kubeconfig_settings(str(submitter)))
    try:
        sent = submission.submit(
            client, task.plan(1), lambda path, props: Storage.from_spark_conf(props), Log()
        )
        trigger = make_trigger(conn_id, ns, sent.app_id, sent.driver_pod_name)
        from_trigger = in_thread(lambda: asyncio.run(final_event(trigger, 480)))
        spec = FollowSpec(sent.app_id, ns, sent.driver_pod_name, start_time=time.time())
        from_worker = in_thread(
            lambda: follow_application(DriverPods(client), spec, window_seconds=5).final or {}
        )
        triggered, waited = from_trigger(), from_worker()
    finally:
        client.close()
    elapsed = time.monotonic() - started
    wait_for(lambda: everything.gone(sent.driver_pod_name) or everything.reached(
        "driver", "Succeeded"), 60, "the recorder to see the driver's end")  # fmt: skip
    everything.stop()
    selected.stop()
    assert (triggered["status"], waited["status"]) == ("success", "success"), (triggered, waited)

    # Executors came and went: one ended before another started.
    executors = everything.names("executor")
    figures = {name: own_figures(everything.pods[name]) for name in executors}
    assert len(executors) >= 2, everything.events
    assert any(a[3] <= b[2] for a in figures.values() for b in figures.values() if a[3] > a[2]), (
        figures
    )
    # The task's selector found every executor pod of the namespace (and the driver).
    assert selected.names("executor") == executors
    assert selected.names("driver") == [sent.driver_pod_name]

    driver = own_figures(everything.pods[sent.driver_pod_name])
    created = epoch(everything.pods[sent.driver_pod_name]["metadata"]["creationTimestamp"])
    driver_pending = driver[2] - (created or 0.0)
    pods = [driver, *figures.values()]
    expected_cores = sum(cores * (end - start) for cores, _, start, end in pods)
    expected_gib = sum(gib * (end - start) for _, gib, start, end in pods)
    cores_slack = sum(cores for cores, *_ in pods)  # one second per pod
    gib_slack = sum(gib for _, gib, *_ in pods)
    ran = [f for f in figures.values() if f[3] > f[2]]
    peak = max(sum(1 for _, _, s, e in ran if s <= start < e) for _, _, start, _ in ran)
    for cost in (triggered["cost"], waited["cost"]):
        assert abs(cost["core_seconds"] - expected_cores) <= cores_slack, (cost, figures)
        assert abs(cost["gib_seconds"] - expected_gib) <= gib_slack, (cost, figures)
        assert cost["gpu_seconds"] == 0.0
        assert cost["executor_pods"] == len(executors), (cost, executors)
        assert cost["peak_executors"] == peak, (cost, figures)
        assert cost["driver"]["core_seconds"] == pytest.approx(
            driver[0] * (driver[3] - driver[2]), abs=driver[0]
        )
        # The driver's own creation -> start, which the API server stamps to the second.
        assert cost["pending_seconds"] == pytest.approx(driver_pending, abs=1.0), cost
    print(f"cost from the trigger: {triggered['cost']}\nfrom the worker: {waited['cost']}")
    REAL_SPARK_TIMINGS["dynamic allocation cost: driver Succeeded"] = elapsed
