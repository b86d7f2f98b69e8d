"""Disruption protection against the real API server and kube-controller-manager (its
disruption controller computes the budget's status, its garbage collector removes it; KWOK's
pods are Ready): with spark.kubernetes.sparkk8s.driver.disruptionBudget.enabled, given to
`sparkk8s-submit` as the operator gives it in `conf`, the running driver's eviction is refused
with 429, the application then completes, and the budget goes with the driver pod; a
submission failing half-way removes it; without it, an evicted driver ends as the
infrastructure kind and says it was evicted."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from airflow_provider_sparkk8s.cli.submit import EXIT_CODES, Outcome, run, wait_for_driver
from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.submission.features.driver_disruption_budget import ENABLED_KEY
from testenv.harness.kube import request
from testenv.harness.pods import phase, wait_for_pod
from testenv.harness.waiting import wait_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

HOLD = "kwok.sparkk8s.io/hold"
PDBS = "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"


class Quiet:
    def info(self, msg: str, *args: Any) -> None: ...

    warning = info


def argv(control_plane: Any, namespace: str, *conf: str) -> list[str]:
    return [
        "--master", f"k8s://{control_plane.server}", "--deploy-mode", "cluster",
        "--conf", f"spark.kubernetes.namespace={namespace}",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.3.0",
        "--conf", f"spark.kubernetes.driver.annotation.{HOLD}=true",
        *[arg for entry in conf for arg in ("--conf", entry)],
        "--class", "org.example.Main", "local:///opt/app.jar",
    ]  # fmt: skip


def cli(control_plane: Any, namespace: str, tmp_path: Path, *conf: str) -> tuple[Outcome, str]:
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "kubeconfig", namespace)
    environ = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    err = io.StringIO()
    outcome = run(
        argv(control_plane, namespace, *conf), environ=environ, out=io.StringIO(), err=err
    )
    return outcome, err.getvalue()


def driver_name(admin: KubeClient, namespace: str) -> str:
    listed = admin.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": "spark-role=driver"}
    )
    (pod,) = listed["items"]
    return str(pod["metadata"]["name"])


def budgets(admin: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return list(admin.request("GET", PDBS.format(namespace=namespace))["items"])


def evict(kube_admin: Any, namespace: str, name: str) -> Any:
    """POST the pod's eviction subresource, as `kubectl drain` and node autoscalers do."""
    return request(
        kube_admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}},
    )


def is_ready(pod: dict[str, Any]) -> bool:
    ready = [c for c in pod["status"].get("conditions") or [] if c.get("type") == "Ready"]
    return phase(pod) == "Running" and bool(ready) and ready[0].get("status") == "True"


def test_the_budget_refuses_the_drivers_eviction_and_goes_with_the_driver(  # type: ignore[no-untyped-def]
    control_plane, admin: KubeClient, kube_admin: Any, namespace: str, tmp_path: Path
) -> None:
    outcome, _ = cli(
        control_plane,
        namespace,
        tmp_path,
        f"{ENABLED_KEY}=true",
        "spark.kubernetes.submission.waitAppCompletion=false",
    )
    assert outcome.exit_code == 0
    name = driver_name(admin, namespace)
    pod = wait_for_pod(kube_admin, namespace, name, is_ready, message="the driver Ready")
    (budget,) = budgets(admin, namespace)
    assert budget["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": name,
            "uid": pod["metadata"]["uid"],
            "controller": True,
        }
    ]
    app_id = pod["metadata"]["labels"]["spark-app-selector"]
    assert budget["spec"]["selector"] == {
        "matchLabels": {"spark-app-selector": app_id, "spark-role": "driver"}
    }

    def computed() -> dict[str, Any] | None:
        (current,) = budgets(admin, namespace)
        status = current.get("status") or {}
        settled = status.get("observedGeneration") == current["metadata"]["generation"]
        return status if settled and status.get("currentHealthy") == 1 else None

    # The disruption controller's verdict, so the 429 below is the budget's, not "not yet
    # processed".
    status = wait_for(computed, 60, "the disruption controller to count the driver")
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (
        1,
        1,
        0,
    )

    with pytest.raises(ApiException) as refused:
        evict(kube_admin, namespace, name)
    assert refused.value.status == 429
    assert "disruption budget" in str(refused.value.body)
    still = wait_for_pod(kube_admin, namespace, name, is_ready, message="the driver, untouched")
    assert "deletionTimestamp" not in still["metadata"]

    # The application then completes, followed as sparkk8s-submit follows it.
    request(
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        {"metadata": {"annotations": {HOLD: "false"}}},
        "application/merge-patch+json",
    )
    state = wait_for_driver(admin, namespace, name, io.StringIO())
    assert (state.state, state.exit_code, state.disruption) == ("succeeded", 0, None)

    # Owned by the driver: the garbage collector removes the budget with the pod.
    admin.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
    wait_for(lambda: budgets(admin, namespace) == [], 60, "the garbage collector to remove it")


def test_a_submission_failing_half_way_removes_the_budget(  # type: ignore[no-untyped-def]
    control_plane, admin: KubeClient, namespace: str, tmp_path: Path
) -> None:
    request_ = submission.SubmissionRequest(
        argv(control_plane, namespace, f"{ENABLED_KEY}=true"), environ={}, cwd=str(tmp_path)
    )
    plan = submission.plan(submission.parse(request_), spark_version="4.3.0", environ={})
    (budget,) = [o for o in plan.rendered.resources if o["kind"] == "PodDisruptionBudget"]
    # An immutable ConfigMap of the same name: the last apply (after the budget) gets 422.
    admin.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"metadata": {"name": plan.rendered.conf_map_name}, "immutable": True},
    )
    with pytest.raises(SubmissionError) as caught:
        submission.submit(admin, plan, lambda _path, conf: Storage.from_spark_conf(conf), Quiet())
    rolled_back = str(caught.value).split("rolled back: ", 1)[1]
    assert rolled_back.startswith(f"PodDisruptionBudget/{budget['metadata']['name']}, ")
    assert budgets(admin, namespace) == []
    with pytest.raises(KubeApiError) as gone:
        admin.request("GET", f"{PDBS.format(namespace=namespace)}/{budget['metadata']['name']}")
    assert gone.value.status == 404


def test_without_a_budget_an_evicted_driver_is_infrastructure_and_says_evicted(  # type: ignore[no-untyped-def]
    control_plane, admin: KubeClient, kube_admin: Any, namespace: str, tmp_path: Path
) -> None:
    """The Eviction API marks the pod (DisruptionTarget) and deletes it; KWOK removes it at
    once, so the CLI's follower sees the mark and then no pod."""
    result: dict[str, tuple[Outcome, str]] = {}
    waiting = threading.Thread(
        target=lambda: result.setdefault("cli", cli(control_plane, namespace, tmp_path)),
        daemon=True,
    )
    waiting.start()
    name = wait_for(lambda: _driver_or_none(admin, namespace), 60, "the driver pod")
    wait_for_pod(kube_admin, namespace, name, is_ready, message="the driver Ready")
    evict(kube_admin, namespace, name)  # 201: nothing protects it
    waiting.join(120)
    outcome, err = result["cli"]
    assert outcome.exit_code == EXIT_CODES["infrastructure"]
    assert outcome.state is not None
    assert (outcome.state.reason, outcome.state.disruption) == (
        "EvictionByEvictionAPI",
        "EvictionByEvictionAPI",
    )
    assert f"finished: failed, EvictionByEvictionAPI: driver pod {name} was evicted " in err
    assert "Failure kind: infrastructure" in err


def _driver_or_none(admin: KubeClient, namespace: str) -> str | None:
    listed = admin.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": "spark-role=driver"}
    )
    return listed["items"][0]["metadata"]["name"] if listed["items"] else None
