"""Spark Pi for real on the real node, on every Spark line: `sparkk8s-submit` (cluster mode,
as the documented submitter) against the real API server reads the line from the image tag
(`sparkk8s/spark:<version>`, as for an official Spark image) and builds that line's objects;
the kubelet runs the driver and two executors from that line's OCI image, built from the
parity oracle's pyspark install (testenv/realnode/image.py) and imported on first use, as
user 185. Before 4.3 the executors dial the driver by its Service name, which only cluster
DNS (dnsmasq and the Service records testenv/realnode/cluster_dns.py writes) can resolve: 3.5
and 4.0 have no `spark.kubernetes.executor.useDriverPodIP`, and 4.1 and 4.2 default it to
false. 4.3 defaults it to true: its executors dial the driver pod's address on the node's
bridge.

The node has the machine's 2 CPUs, so the pods ask for a fraction of a core each; Spark's
default (1 per pod) would leave an executor Pending."""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.rbac import DRIVER_SERVICE_ACCOUNT
from testenv.real_spark import (
    PI,
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    PodRecorder,
    driver_log,
    env_value,
    registered_executors,
    submit_with_cli,
)
from testenv.realnode.config import POD_SUBNET
from testenv.realnode.node import RealNode
from testenv.runtime_image import RUNTIME_VERSIONS, SPARK_VERSION, image_name

pytestmark = [pytest.mark.timeout(600)]
BASE_PORTS = {"driver-rpc-port", "blockmanager", "spark-ui"}
# version -> (the driver's container ports, whether a NetworkPolicy guards the executors)
LINES = {
    "3.5.9": (BASE_PORTS, False),
    "4.0.5": (BASE_PORTS, False),
    "4.1.4": (BASE_PORTS | {"spark-connect"}, False),  # Spark Connect's port from 4.1
    "4.2.1": (BASE_PORTS | {"spark-connect"}, True),  # NetworkPolicyFeatureStep from 4.2
    "4.3.0": (BASE_PORTS | {"spark-connect"}, True),
}


def driver_properties(api: ApiClient, driver: dict[str, Any]) -> dict[str, str]:
    """spark.properties from the driver's ConfigMap, as the driver reads it."""
    (volume,) = [v for v in driver["spec"]["volumes"] if v["name"] == "spark-conf-volume-driver"]
    namespace, name = driver["metadata"]["namespace"], volume["configMap"]["name"]
    data = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")["data"]
    return load_java_properties(data["spark.properties"])


def driver_bindings(api: ApiClient, ns: str) -> tuple[list[str], list[str]]:
    """What binds the driver's service account: ClusterRoleBindings, and RoleBindings in
    `ns`, each as "<binding> -> <roleRef kind>/<roleRef name>"."""
    account = {"kind": "ServiceAccount", "name": DRIVER_SERVICE_ACCOUNT, "namespace": ns}
    rbac = "/apis/rbac.authorization.k8s.io/v1"

    def naming(path: str, kind: str, default_ns: str) -> list[str]:
        return sorted(
            f"{kind}/{b['metadata']['name']} -> {b['roleRef']['kind']}/{b['roleRef']['name']}"
            for b in kube.request(api, "GET", path)["items"]
            if any(
                {**subject, "namespace": subject.get("namespace", default_ns)} == account
                for subject in b.get("subjects") or []
            )
        )

    return (
        naming(f"{rbac}/clusterrolebindings", "ClusterRoleBinding", ""),
        naming(f"{rbac}/namespaces/{ns}/rolebindings", "RoleBinding", ns),
    )


def may(api: ApiClient, ns: str, verb: str, resource: str, where: str) -> bool:
    """Whether the driver's service account may `verb` `resource` in `where` ("" : cluster-wide),
    as the API server's authorizer answers (SubjectAccessReview)."""
    attributes = {"verb": verb, "resource": resource, **({"namespace": where} if where else {})}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{ns}:{DRIVER_SERVICE_ACCOUNT}",
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{ns}",
                "system:authenticated",
            ],
            "resourceAttributes": attributes,
        },
    }
    answer = kube.request(api, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


def test_every_line_is_named_here():
    assert sorted(LINES) == sorted(RUNTIME_VERSIONS)


@pytest.mark.controlplane
@pytest.mark.parametrize("version", sorted(LINES))
def test_spark_pi_runs_on_the_real_kubelet_on_every_line(
    version: str,
    real_node: RealNode,
    real_plane: ControlPlane,
    real_namespace: str,
    real_submitter: Path,
    real_admin: ApiClient,
):
    ns = real_namespace
    ports_of_line, has_policy = LINES[version]
    waited = time.monotonic()
    image = real_node.ensure_spark_image(version)  # imported in the background, or now
    waited = time.monotonic() - waited
    assert image == f"docker.io/{image_name(version)}"
    conf = {**SMALL_PODS, "spark.kubernetes.container.image": image_name(version)}
    recorder = PodRecorder(real_plane, ns).start()
    started = time.monotonic()
    name = "pi" + version.replace(".", "")
    done = submit_with_cli(real_plane, ns, real_submitter, name, [PI, "4", "100000"], conf)
    elapsed = time.monotonic() - started
    recorder.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # The tag said the line: no "does not say its Spark release" fallback to 4.3.
    assert "warning" not in output, output
    # The states as sparkk8s-submit printed them while it waited (on stderr, as spark-submit).
    assert "(phase: Running)" in output
    assert "finished: succeeded, Completed, exit code 0" in output

    (driver,) = recorder.names("driver")
    pod = recorder.pods[driver]
    executors = recorder.names("executor")
    assert len(executors) == 2, recorder.events
    # The kubelet ran them: on the real node, with addresses on its bridge, in containerd.
    for each in (driver, *executors):
        seen = recorder.pods[each]
        assert seen["spec"]["nodeName"] == "real-node-0", each
        assert ipaddress.ip_address(recorder.pod_ips[each]) in ipaddress.ip_network(POD_SUBNET)
        (status,) = seen["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://"), status
        assert status["image"].endswith(image_name(version)), status
    log = driver_log(real_admin, ns, driver)  # through the API server and the kubelet
    assert f"Running Spark version {version}" in log, log[:3000]
    assert "Pi is roughly 3.1" in log, log[-3000:]
    # The image's user (185, `spark` in its passwd), as in the apache/spark images.
    assert "Changing view acls to: spark" in log, log[:5000]
    assert sorted(i for _, i in registered_executors(log)) == ["1", "2"]
    assert all(name in log for name in executors)  # pi.py names the pods that computed it

    # The line's objects: the spark-connect port from 4.1, the NetworkPolicy from 4.2.
    ports = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
    assert ports == ports_of_line
    policies = kube.request(
        real_admin, "GET", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
    )["items"]
    owners = [ref["name"] for policy in policies for ref in policy["metadata"]["ownerReferences"]]
    assert owners == ([driver] if has_policy else [])
    # Before 4.3, each executor dialled the driver by its Service's name (spark.driver.host,
    # which spark-submit set in the driver's properties), resolved by the node's cluster DNS;
    # 4.3's by the driver pod's address.
    host = driver_properties(real_admin, pod)["spark.driver.host"]
    assert host.endswith(f"-driver-svc.{ns}.svc"), host
    if version == SPARK_VERSION:
        host = recorder.pod_ips[driver]
    driver_url = f"spark://CoarseGrainedScheduler@{host}:7078"
    urls = [env_value(recorder.pods[name], "SPARK_DRIVER_URL") for name in executors]
    assert urls == [driver_url, driver_url]

    # Spark removed its executors when it stopped (their deletion takes their grace period);
    # the driver pod stays.
    def pod_names() -> list[str]:
        items = kube.request(real_admin, "GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        return [p["metadata"]["name"] for p in items]

    wait_for(lambda: pod_names() == [driver], 90, "only the driver pod left")

    # The driver ran as `spark` with only the namespaced `spark-driver` Role (issue 44 item
    # 5; SPARK-56793: a driver's executor poll must stay in its namespace): nothing binds it
    # cluster-wide, it may list pods in its namespace and not across the cluster, and the
    # driver met no refusal (a poll's 403 is only logged, so the log is where it shows).
    assert pod["spec"]["serviceAccountName"] == DRIVER_SERVICE_ACCOUNT
    assert driver_bindings(real_admin, ns) == (
        [],
        ["RoleBinding/spark-driver -> Role/spark-driver"],
    )
    assert may(real_admin, ns, "list", "pods", ns) and may(real_admin, ns, "watch", "pods", ns)
    assert not may(real_admin, ns, "list", "pods", "")
    assert "forbidden" not in log.lower(), [x for x in log.splitlines() if "orbidden" in x]

    running = recorder.first("driver", "Running")
    first_executor = recorder.first("executor", "Running")
    assert running is not None and first_executor is not None
    line = f"real node, CLI pi on Spark {version}"
    REAL_SPARK_TIMINGS[f"{line}: driver Running"] = running.seconds
    REAL_SPARK_TIMINGS[f"{line}: first executor Running"] = first_executor.seconds
    REAL_SPARK_TIMINGS[f"{line}: succeeded (CLI exit)"] = elapsed
    imported = real_node.timings.get(f"import {image}")
    if imported is not None:
        REAL_SPARK_TIMINGS[f"real node: import {image}"] = imported
    REAL_SPARK_TIMINGS[f"real node: the test waited for {image}"] = waited
