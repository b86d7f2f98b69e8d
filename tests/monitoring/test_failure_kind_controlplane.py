"""Failure kinds from driver pods as the real API server returns them: the driver's own
exit exception annotation (written as Spark's driver writes it, a patch of its pod), an
OOMKilled container, a deletion while running, a preemption condition. The pods are read
through the product's pods service, as the operator and the CLI read them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, reduce_application
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
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

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(120)]

DRIVER = ("spark-kubernetes-driver",)
HELD = "sparkk8s.test/held"  # a finalizer: the test writes the deleted pod's status, as a kubelet
STACK = (
    "java.lang.IllegalStateException: table t not found\n\tat org.example.Job.main(Job.java:12)\n"
)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def pods(kubeconfig: Path) -> Iterator[DriverPods]:
    with DriverPods(KubeClient(kubeconfig_settings(str(kubeconfig))), owns_client=True) as service:
        yield service


def start_driver(api: Any, namespace: str, name: str, **metadata: Any) -> str:
    app = new_app_id()
    manifest = spark_pod(name, app, annotations={MANUAL: "true"})
    manifest["metadata"].update(metadata)
    create(api, namespace, manifest)
    set_pod_status(api, namespace, name, running_status(DRIVER, now()))
    return app


def read(pods: DriverPods, namespace: str, name: str) -> ApplicationState:
    pod = pods.get(namespace, name)
    assert pod is not None
    return reduce_application([pod], driver_pod_name=name)


def test_the_drivers_exit_exception_names_an_application_error(
    kube_admin: Any, namespace: str, pods: DriverPods
) -> None:
    start_driver(kube_admin, namespace, "raises-driver")
    # What Spark 4.1+'s driver does with annotateExitException: patch its own pod.
    request(
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/raises-driver",
        {"metadata": {"annotations": {"spark.exit-exception": STACK}}},
        "application/merge-patch+json",
    )
    set_pod_status(
        kube_admin, namespace, "raises-driver", terminated_status(DRIVER, 1, "Error", now())
    )
    state = read(pods, namespace, "raises-driver")
    assert (state.state, state.exit_code) == ("failed", 1)
    assert state.exit_exception == "java.lang.IllegalStateException: table t not found"
    assert failure_kind(state.to_dict()) == "application_error"


def test_an_oom_killed_driver_is_out_of_memory(
    kube_admin: Any, namespace: str, pods: DriverPods
) -> None:
    start_driver(kube_admin, namespace, "oom-driver")
    status = terminated_status(DRIVER, 137, "OOMKilled", now())
    set_pod_status(kube_admin, namespace, "oom-driver", status)
    assert failure_kind(read(pods, namespace, "oom-driver").to_dict()) == "out_of_memory"


def test_a_driver_deleted_while_it_runs_is_infrastructure(
    kube_admin: Any, namespace: str, pods: DriverPods
) -> None:
    start_driver(kube_admin, namespace, "deleted-driver", finalizers=[HELD])
    request(kube_admin, "DELETE", f"/api/v1/namespaces/{namespace}/pods/deleted-driver")
    # The kubelet stops the container (SIGTERM) and reports it, then the pod goes.
    status = terminated_status(DRIVER, 143, "Error", now())
    set_pod_status(kube_admin, namespace, "deleted-driver", status)
    state = read(pods, namespace, "deleted-driver")
    assert (state.state, state.disruption) == ("failed", "Deleted")
    assert failure_kind(state.to_dict()) == "infrastructure"
    request(
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/deleted-driver",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    wait_for_pod_gone(kube_admin, namespace, "deleted-driver")


def test_a_preempted_driver_is_infrastructure_whatever_it_exited_with(
    kube_admin: Any, namespace: str, pods: DriverPods
) -> None:
    start_driver(kube_admin, namespace, "preempted-driver")
    status = terminated_status(DRIVER, 1, "Error", now())
    status["conditions"] = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "preempted by a higher priority pod",
        }
    ]
    set_pod_status(kube_admin, namespace, "preempted-driver", status)
    state = read(pods, namespace, "preempted-driver")
    assert state.disruption == "PreemptionByScheduler"
    assert failure_kind(state.to_dict()) == "infrastructure"
