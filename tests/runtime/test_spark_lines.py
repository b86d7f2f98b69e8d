"""Every older Spark line for real: `sparkk8s-submit` reads the line from the image tag
(`sparkk8s/spark:<version>`, as for an official Spark image) and builds that line's objects,
and pyspark <version>'s own distribution runs them on the node agent, submitted as the
documented submitter with the driver as the documented `spark` account. (4.3, the default,
runs in the CLI, demo, example-DAG and e2e tests.)

Before 4.3 the executors dial the driver by its Service name: 3.5 and 4.0 have no
`spark.kubernetes.executor.useDriverPodIP`, and 4.1 and 4.2 default it to false. So these
runs also prove that path (Service -> per-pod hosts file -> the driver's address)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.submission.arguments import load_java_properties
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.runtime_image import image_name
from tests.support.real_spark import (
    PI,
    REAL_SPARK_TIMINGS,
    PodRecorder,
    driver_log,
    env_value,
    registered_executors,
    submit_with_cli,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]
BASE_PORTS = {"driver-rpc-port", "blockmanager", "spark-ui"}
# version -> (the driver's container ports, whether a NetworkPolicy guards the executors)
LINES = {
    "3.5.9": (BASE_PORTS, False),
    "4.0.5": (BASE_PORTS, False),
    "4.1.4": (BASE_PORTS | {"spark-connect"}, False),  # Spark Connect's port from 4.1
    "4.2.1": (BASE_PORTS | {"spark-connect"}, True),  # NetworkPolicyFeatureStep from 4.2
}


def driver_properties(api: ApiClient, driver: dict[str, Any]) -> dict[str, str]:
    """spark.properties from the driver's ConfigMap, as the driver reads it."""
    (volume,) = [v for v in driver["spec"]["volumes"] if v["name"] == "spark-conf-volume-driver"]
    namespace, name = driver["metadata"]["namespace"], volume["configMap"]["name"]
    data = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")["data"]
    return load_java_properties(data["spark.properties"])


@pytest.mark.parametrize("version", sorted(LINES))
def test_pi_on_each_older_line_whose_executors_dial_the_driver_service(
    version: str,
    runtime_plane: ControlPlane,
    runtime_namespace: str,
    submitter: Path,
    runtime_admin: ApiClient,
):
    ns = runtime_namespace
    ports_of_line, has_policy = LINES[version]
    recorder = PodRecorder(runtime_plane, ns).start()
    started = time.monotonic()
    image = {"spark.kubernetes.container.image": image_name(version)}
    name = "pi" + version.replace(".", "")
    done = submit_with_cli(runtime_plane, ns, submitter, name, [PI, "4", "100000"], image)
    elapsed = time.monotonic() - started
    recorder.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # The tag said the line: no "does not say its Spark release" fallback to 4.3.
    assert "warning" not in output, output
    assert "finished: succeeded, Completed, exit code 0" in output

    (driver,) = recorder.names("driver")
    log = driver_log(runtime_admin, ns, driver)
    assert f"Running Spark version {version}" in log, log[:3000]
    assert "Pi is roughly 3.1" in log, log[-3000:]
    executors = recorder.names("executor")
    assert len(executors) == 2, recorder.events
    assert sorted(i for _, i in registered_executors(log)) == ["1", "2"]
    assert all(name in log for name in executors)  # pi.py names the pods that computed it

    # The line's objects: the spark-connect port from 4.1, the NetworkPolicy from 4.2.
    ports = {p["name"] for p in recorder.pods[driver]["spec"]["containers"][0]["ports"]}
    assert ports == ports_of_line
    policies = kube.request(
        runtime_admin, "GET", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
    )["items"]
    owners = [ref["name"] for policy in policies for ref in policy["metadata"]["ownerReferences"]]
    assert owners == ([driver] if has_policy else [])
    # Each executor dialled the driver by its Service's name (spark.driver.host, which
    # spark-submit set in the driver's properties), not by the driver pod's address. (The
    # Service itself is gone: the driver deletes it when it stops.)
    host = driver_properties(runtime_admin, recorder.pods[driver])["spark.driver.host"]
    assert host.endswith(f"-driver-svc.{ns}.svc"), host
    driver_url = f"spark://CoarseGrainedScheduler@{host}:7078"
    urls = [env_value(recorder.pods[name], "SPARK_DRIVER_URL") for name in executors]
    assert urls == [driver_url, driver_url]

    running = recorder.first("executor", "Running")
    assert running is not None
    REAL_SPARK_TIMINGS[f"CLI pi on Spark {version}: first executor Running"] = running.seconds
    REAL_SPARK_TIMINGS[f"CLI pi on Spark {version}: succeeded (CLI exit)"] = elapsed
