"""Spark's VolcanoFeatureStep against the real API server: the PodGroup CRD installed, the
PodGroup is stored before the driver and owned by it; without the CRD a clear error and
nothing left behind."""

from __future__ import annotations

import io
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.harness.waiting import wait_for
from tests.support.volcano import CRD_NAME, POD_GROUP_CRD

pytestmark = pytest.mark.controlplane
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
STEP = "org.apache.spark.deploy.k8s.features.VolcanoFeatureStep"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"


@pytest.fixture
def admin(control_plane) -> Iterator[KubeClient]:  # type: ignore[no-untyped-def]
    settings = ClientSettings(
        server=control_plane.server,
        ca_file=str(control_plane.ca_file),
        client_cert_file=str(control_plane.admin_cert_file),
        client_key_file=str(control_plane.admin_key_file),
    )
    with KubeClient(settings) as client:
        yield client


@pytest.fixture
def ns(admin: KubeClient) -> Iterator[str]:
    name = f"volcano-{secrets.token_hex(4)}"
    admin.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name}})
    wait_for(
        lambda: admin.request(
            "GET", f"/api/v1/namespaces/{name}/serviceaccounts",
            params={"fieldSelector": "metadata.name=default"},
        ).get("items"),
        30, f"service account {name}/default",
    )  # fmt: skip
    yield name
    admin.request("DELETE", f"/api/v1/namespaces/{name}")


def served(admin: KubeClient) -> bool:
    try:
        admin.request("GET", "/apis/scheduling.volcano.sh/v1beta1")
    except KubeApiError:
        return False
    return True


@pytest.fixture
def pod_group_crd(admin: KubeClient) -> Iterator[None]:
    admin.request("POST", CRDS, json=POD_GROUP_CRD)
    wait_for(lambda: served(admin), 30, "the PodGroup API")
    yield
    admin.request("DELETE", f"{CRDS}/{CRD_NAME}")
    wait_for(lambda: not served(admin), 60, "the PodGroup API to go")


def submit(control_plane, ns: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    template = tmp_path / "podgroup.yaml"
    template.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "spec:\n  queue: default\n  minMember: 1\n  minResources: {cpu: 1, memory: 1Gi}\n"
    )
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "kubeconfig", ns)
    argv = [
        "--master", f"k8s://{control_plane.server}", "--deploy-mode", "cluster",
        "--conf", f"spark.kubernetes.namespace={ns}",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.3.0",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--conf", f"spark.kubernetes.driver.pod.featureSteps={STEP}",
        "--conf", f"spark.kubernetes.scheduler.volcano.podGroupTemplateFile={template}",
        "--conf", "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold=true",
        "--class", "org.example.Main", "local:///opt/app.jar",
    ]  # fmt: skip
    environ = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    return run(argv, environ=environ, out=io.StringIO(), err=io.StringIO())


def test_pod_group_before_the_driver_and_owned_by_it(
    control_plane, admin, ns, pod_group_crd, tmp_path
):  # type: ignore[no-untyped-def]
    assert submit(control_plane, ns, tmp_path).exit_code == 0
    groups = admin.request("GET", PODGROUPS.format(ns=ns))["items"]
    pods = admin.request("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    assert len(groups) == 1 and len(pods) == 1
    group, pod = groups[0], pods[0]
    app_id = pod["metadata"]["labels"]["spark-app-selector"]
    assert group["metadata"]["name"] == f"{app_id}-podgroup"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == f"{app_id}-podgroup"
    assert group["spec"] == {
        "queue": "default",
        "minMember": 1,
        "minResources": {"cpu": "1", "memory": "1Gi"},
    }
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Pod", pod["metadata"]["name"], pod["metadata"]["uid"],
    )  # fmt: skip
    created = time.strptime(group["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    assert created <= time.strptime(pod["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    # The driver owns it, so the garbage collector removes it with the driver.
    admin.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}")
    wait_for(lambda: not admin.request("GET", PODGROUPS.format(ns=ns))["items"], 60, "GC")


def test_without_the_crd_a_clear_error_and_nothing_left(control_plane, admin, ns, tmp_path):  # type: ignore[no-untyped-def]
    assert not served(admin)
    with pytest.raises(SubmissionError) as err:
        submit(control_plane, ns, tmp_path)
    message = str(err.value)
    assert "PodGroup" in message and "CustomResourceDefinition" in message, message
    assert admin.request("GET", f"/api/v1/namespaces/{ns}/pods")["items"] == []
    assert admin.request("GET", f"/api/v1/namespaces/{ns}/configmaps",
                         params={"labelSelector": "spark-app-selector"})["items"] == []  # fmt: skip
