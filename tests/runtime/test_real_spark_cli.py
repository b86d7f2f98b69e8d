"""sparkk8s-submit with real Spark: the PySpark Pi and a failing program run on the node
agent, as the documented submitter, with the driver as the documented `spark` account."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.harness import kube
from tests.support.real_spark import (
    FAIL,
    PI,
    REAL_SPARK_TIMINGS,
    PodRecorder,
    driver_log,
    env_value,
    registered_executors,
    submit_with_cli,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]


def test_pi_runs_on_two_real_executors_and_the_cli_exits_0(
    runtime_plane: ControlPlane, runtime_namespace: str, submitter: Path, runtime_admin: ApiClient
):
    ns = runtime_namespace
    recorder = PodRecorder(runtime_plane, ns).start()
    started = time.monotonic()
    done = submit_with_cli(runtime_plane, ns, submitter, "pi", [PI, "4", "100000"])
    elapsed = time.monotonic() - started
    recorder.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # The states as sparkk8s-submit printed them while it waited (on stderr, as spark-submit).
    assert "(phase: Running)" in output
    assert "finished: succeeded, Completed, exit code 0" in output

    (driver,) = recorder.names("driver")
    log = driver_log(runtime_admin, ns, driver)
    assert "Pi is roughly 3.1" in log, log[-3000:]
    # The driver created both executors with its own identity, and both registered with it.
    executors = recorder.names("executor")
    assert len(executors) == 2, recorder.events
    assert recorder.reached("executor", "Running") == executors
    assert sorted(i for _, i in registered_executors(log)) == ["1", "2"]
    assert all(name in log for name in executors)  # the tasks ran there (pi.py names them)
    # Spark 4.3 sets spark.kubernetes.executor.useDriverPodIP by default: the executors dialled
    # the driver pod's address (tests/realnode/test_real_spark_pi.py runs the Service-name
    # path, on every line).
    driver_ip = recorder.pods[driver]["status"]["podIP"]
    urls = {env_value(recorder.pods[name], "SPARK_DRIVER_URL") for name in executors}
    assert urls == {f"spark://CoarseGrainedScheduler@{driver_ip}:7078"}
    # Spark removed its executors when it stopped; the driver pod stays, as with spark-submit.
    remaining = kube.request(runtime_admin, "GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    assert [p["metadata"]["name"] for p in remaining] == recorder.names("driver")

    running = recorder.first("driver", "Running")
    assert running is not None
    REAL_SPARK_TIMINGS["CLI pi: driver Running"] = running.seconds
    first_executor = recorder.first("executor", "Running")
    assert first_executor is not None
    REAL_SPARK_TIMINGS["CLI pi: first executor Running"] = first_executor.seconds
    REAL_SPARK_TIMINGS["CLI pi: succeeded (CLI exit)"] = elapsed


def test_a_python_exception_fails_the_application_and_the_cli_exits_1(
    runtime_plane: ControlPlane, runtime_namespace: str, submitter: Path, runtime_admin: ApiClient
):
    ns = runtime_namespace
    recorder = PodRecorder(runtime_plane, ns).start()
    started = time.monotonic()
    done = submit_with_cli(runtime_plane, ns, submitter, "fails", [FAIL, "no input today"])
    REAL_SPARK_TIMINGS["CLI failing app: failed (CLI exit)"] = time.monotonic() - started
    recorder.stop()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed, Error, exit code 1" in done.stdout + done.stderr
    (driver,) = recorder.names("driver")
    log = driver_log(runtime_admin, ns, driver)
    assert "RuntimeError: no input today" in log
