"""The operator's task identity, and the platform policy's labels, on every pod of a real
Spark application: real Spark 4.3 on the real node creates the executors from
`spark.kubernetes.executor.label.*`, and the task's label selector finds the driver and
every executor (with executor decommissioning on, each executor has Spark's preStop hook). Submitted through the operator's own path (`TaskSubmission.plan` ->
the submission service) as the documented submitter; no Airflow process is needed for it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.application.policy.guardrails import executor_memory_mib
from airflow_provider_sparkk8s.application.policy.platform_policy import parse_policy
from airflow_provider_sparkk8s.application.task.submission_plan import KubernetesParameters
from airflow_provider_sparkk8s.application.task.task_identity import (
    TaskInstanceRef,
    driver_labels,
    pods_selector,
)
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.services.task.task_submission import TaskSubmission
from airflow_provider_sparkk8s.submission.conf import PYTHON_RUNNER, DriverConf, MainAppResource
from airflow_provider_sparkk8s.submission.features.executor_decommission import (
    ENABLED_KEY as DECOMMISSION_KEY,
)
from airflow_provider_sparkk8s.submission.naming import new_submission_ids
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import (
    BASE_CONF,
    PI,
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    PodRecorder,
    driver_log,
)
from tests.support.driver_conf import IDS

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]
PLATFORM_LABELS = {"cost-center": "data-eng", "platform.example.com/tier": "batch"}


class Log:
    def info(self, msg: str, *args: object) -> None:
        print(msg % args)

    warning = info


def test_driver_and_every_executor_carry_the_task_identity_and_platform_labels(
    real_plane: ControlPlane, real_namespace: str, real_submitter: Path, real_admin: ApiClient
) -> None:
    ns = real_namespace
    ref = TaskInstanceRef("cost_dag", "spark_pi", "manual__2026-12-01", map_index=-1)
    # Executor decommissioning (ours, one switch) rides along: real Spark's driver must give
    # each executor the preStop hook that Spark's decommission key asks for.
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        "spark.kubernetes.executor.deleteOnTermination": "false",
        DECOMMISSION_KEY: "true",
    }
    argv = ["--master", f"k8s://{real_plane.server}", "--deploy-mode", "cluster",
            "--name", "pi"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    request = submission.SubmissionRequest([*argv, PI, "4", "100000"], os.environ, "/")
    rules = parse_policy({"labels": PLATFORM_LABELS, "required_labels": ["cost-center"]}, "t")
    task = TaskSubmission(
        ref=ref,
        arguments=submission.parse(request),
        kubernetes=KubernetesParameters(namespace=ns),
        spark_version="4.3.0",
        environ={},
        ids=new_submission_ids(),
        policy=rules,
    )
    recorder = PodRecorder(real_plane, ns).start()
    started = time.monotonic()
    client = KubeClient(kubeconfig_settings(str(real_submitter)))
    planned = task.plan(1)
    try:
        sent = submission.submit(
            client, planned, lambda path, props: Storage.from_spark_conf(props), Log()
        )
    finally:
        client.close()
    wait_for(lambda: recorder.reached("driver", "Succeeded"), 420, "the driver to succeed")
    elapsed = time.monotonic() - started
    recorder.stop()
    log = driver_log(real_admin, ns, sent.driver_pod_name)
    assert "Pi is roughly 3.1" in log, log[-3000:]

    expected = {**driver_labels(ref, 1), **PLATFORM_LABELS}
    executors = recorder.names("executor")
    assert len(executors) == 2, recorder.events
    for name in [sent.driver_pod_name, *executors]:
        labels = recorder.pods[name]["metadata"]["labels"]
        assert {key: labels.get(key) for key in expected} == expected, name
    # The task's selector finds the driver and every executor, and nothing else.
    selector = pods_selector(ref)
    path = f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}"
    found = kube.request(real_admin, "GET", path)["items"]
    roles = sorted((p["metadata"]["labels"]["spark-role"], p["metadata"]["name"]) for p in found)
    assert roles == sorted(
        [("driver", sent.driver_pod_name), *(("executor", name) for name in executors)]
    )
    # What the policy's ceilings count for an executor is what real Spark asked for.
    executor_conf = DriverConf(
        spark_conf=planned.spark_conf,
        spark_version="4.3.0",
        ids=IDS,
        main_app_resource=MainAppResource("python", PI),
        main_class=PYTHON_RUNNER,
    )
    for name in executors:
        requests = recorder.pods[name]["spec"]["containers"][0]["resources"]["requests"]
        assert requests["memory"] == f"{executor_memory_mib(executor_conf)}Mi", requests
        assert requests["cpu"] == SMALL_PODS["spark.kubernetes.executor.request.cores"], requests
        container = recorder.pods[name]["spec"]["containers"][0]
        assert container["lifecycle"]["preStop"] == {"exec": {"command": ["/opt/decom.sh"]}}
    assert planned.rendered.system_properties["spark.decommission.enabled"] == "true"
    REAL_SPARK_TIMINGS["operator path pi with executor labels: driver Succeeded"] = elapsed
