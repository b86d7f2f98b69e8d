"""Spark 3.5 for real: `sparkk8s-submit` reads the line from the image tag
(`sparkk8s/spark:3.5.9`, as for an official Spark image) and builds Spark 3.5's objects, and
pyspark 3.5.9's own distribution runs them on the node agent, submitted as the documented
submitter with the driver as the documented `spark` account.

Spark 3.5 has no `spark.kubernetes.executor.useDriverPodIP` (new in 4.1; 4.3 defaults it to
true): its executors always dial the driver by its Service name, so this run also proves that
path (Service -> per-pod hosts file -> the driver's address)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.submission.arguments import load_java_properties
from testenv.controlplane import ControlPlane
from testenv.runtime_image import image_name
from tests.support import kube
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
SPARK_35 = "3.5.9"


def driver_properties(api: ApiClient, driver: dict[str, Any]) -> dict[str, str]:
    """spark.properties from the driver's ConfigMap, as the driver reads it."""
    (volume,) = [v for v in driver["spec"]["volumes"] if v["name"] == "spark-conf-volume-driver"]
    namespace, name = driver["metadata"]["namespace"], volume["configMap"]["name"]
    data = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")["data"]
    return load_java_properties(data["spark.properties"])


def test_pi_on_spark_35_whose_executors_dial_the_driver_service(
    runtime_plane: ControlPlane, runtime_namespace: str, submitter: Path, runtime_admin: ApiClient
):
    ns = runtime_namespace
    recorder = PodRecorder(runtime_plane, ns).start()
    started = time.monotonic()
    image = {"spark.kubernetes.container.image": image_name(SPARK_35)}
    done = submit_with_cli(runtime_plane, ns, submitter, "pi35", [PI, "4", "100000"], image)
    elapsed = time.monotonic() - started
    recorder.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # The tag said the line: no "does not say its Spark release" fallback to 4.3.
    assert "warning" not in output, output
    assert "finished: succeeded, Completed, exit code 0" in output

    (driver,) = recorder.names("driver")
    log = driver_log(runtime_admin, ns, driver)
    assert f"Running Spark version {SPARK_35}" in log, log[:3000]
    assert "Pi is roughly 3.1" in log, log[-3000:]
    executors = recorder.names("executor")
    assert len(executors) == 2, recorder.events
    assert sorted(i for _, i in registered_executors(log)) == ["1", "2"]
    assert all(name in log for name in executors)  # pi.py names the pods that computed it

    # Spark 3.5's objects: no spark-connect port (4.1+) and no NetworkPolicy (4.2+).
    ports = {p["name"] for p in recorder.pods[driver]["spec"]["containers"][0]["ports"]}
    assert ports == {"driver-rpc-port", "blockmanager", "spark-ui"}
    policies = kube.request(
        runtime_admin, "GET", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
    )
    assert policies["items"] == []
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
    REAL_SPARK_TIMINGS["CLI pi on Spark 3.5: first executor Running"] = running.seconds
    REAL_SPARK_TIMINGS["CLI pi on Spark 3.5: succeeded (CLI exit)"] = elapsed
