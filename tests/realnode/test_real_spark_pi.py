"""Spark Pi 4.3.0 for real on the real node: `sparkk8s-submit` (cluster mode, as the
documented submitter) against the real API server; the kubelet runs the driver and two
executors from the OCI image built from local files (testenv/realnode/image.py), as user
185; the executors dial the driver by its Service name, which only cluster DNS (dnsmasq and
the Service records testenv/realnode/cluster_dns.py writes) can resolve.

The node has the machine's 2 CPUs, so the pods ask for a fraction of a core each; Spark's
default (1 per pod) would leave an executor Pending."""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.realnode.config import POD_SUBNET
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
SMALL_PODS = {
    "spark.kubernetes.driver.request.cores": "200m",
    "spark.kubernetes.executor.request.cores": "200m",
    # 4.3 dials the driver's pod IP by default; the Service name is what needs cluster DNS.
    "spark.kubernetes.executor.useDriverPodIP": "false",
}


def test_spark_pi_runs_on_the_real_kubelet_with_executors_dialling_the_driver_service(
    real_plane: ControlPlane, real_namespace: str, real_submitter: Path, real_admin: ApiClient
):
    ns = real_namespace
    recorder = PodRecorder(real_plane, ns).start()
    started = time.monotonic()
    done = submit_with_cli(real_plane, ns, real_submitter, "pi", [PI, "4", "100000"], SMALL_PODS)
    elapsed = time.monotonic() - started
    recorder.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "finished: succeeded, Completed, exit code 0" in output

    (driver,) = recorder.names("driver")
    pod = recorder.pods[driver]
    assert pod["spec"]["nodeName"] == "real-node-0"
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(POD_SUBNET)
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("containerd://")
    log = driver_log(real_admin, ns, driver)  # through the API server and the kubelet
    assert "Running Spark version 4.3.0" in log, log[:3000]
    assert "Pi is roughly 3.1" in log, log[-3000:]
    # The image's user (185, `spark` in its passwd), as in the apache/spark images.
    assert "Changing view acls to: spark" in log, log[:5000]

    executors = recorder.names("executor")
    assert len(executors) == 2, recorder.events
    assert sorted(i for _, i in registered_executors(log)) == ["1", "2"]
    assert all(name in log for name in executors)  # pi.py names the pods that computed it
    # They dialled the driver by its Service's name, resolved by the node's cluster DNS.
    urls = {env_value(recorder.pods[name], "SPARK_DRIVER_URL") for name in executors}
    (url,) = urls
    assert url is not None
    assert url.startswith("spark://CoarseGrainedScheduler@") and url.endswith(
        f"-driver-svc.{ns}.svc:7078"
    ), url
    # Spark removed its executors when it stopped; the driver pod stays.
    remaining = kube.request(real_admin, "GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    assert [p["metadata"]["name"] for p in remaining] == [driver]

    running = recorder.first("driver", "Running")
    first_executor = recorder.first("executor", "Running")
    assert running is not None and first_executor is not None
    REAL_SPARK_TIMINGS["real node, CLI pi: driver Running"] = running.seconds
    REAL_SPARK_TIMINGS["real node, CLI pi: first executor Running"] = first_executor.seconds
    REAL_SPARK_TIMINGS["real node, CLI pi: succeeded (CLI exit)"] = elapsed
