"""sparkk8s-submit with real Spark 4.3.0 on the real node, as the documented submitter with
the driver as the documented `spark` account: a failing PySpark program, and the quickstart's
JVM example (JavaPi, built from testenv/image/jvm into the image's sparkk8s-examples.jar by
testenv/runtime_image.py), submitted as docs/quickstart.md and docs/cli.md say. (The PySpark
Pi on every line is in test_real_spark_pi.py.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.real_spark import (
    FAIL,
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    PodRecorder,
    driver_log,
    submit_with_cli,
)
from testenv.runtime_image import EXAMPLES_JAR, JAVA_PI_CLASS

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]


def test_a_python_exception_fails_the_application_and_the_cli_exits_1(
    real_plane: ControlPlane, real_namespace: str, real_submitter: Path, real_admin: ApiClient
):
    ns = real_namespace
    recorder = PodRecorder(real_plane, ns).start()
    started = time.monotonic()
    app = [FAIL, "no input today"]
    done = submit_with_cli(real_plane, ns, real_submitter, "fails", app, SMALL_PODS)
    REAL_SPARK_TIMINGS["real node, CLI failing app: failed (CLI exit)"] = time.monotonic() - started
    recorder.stop()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed, Error, exit code 1" in done.stdout + done.stderr
    (driver,) = recorder.names("driver")
    # The container's own exit, as the kubelet read it from containerd.
    (status,) = recorder.pods[driver]["status"]["containerStatuses"]
    terminated = status["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error"), terminated
    assert status["containerID"].startswith("containerd://"), status
    log = driver_log(real_admin, ns, driver)
    assert "RuntimeError: no input today" in log


def test_the_readme_jvm_example_computes_pi_on_two_executors(
    real_plane: ControlPlane, real_namespace: str, real_submitter: Path, real_admin: ApiClient
) -> None:
    ns = real_namespace
    recorder = PodRecorder(real_plane, ns).start()
    started = time.monotonic()
    app = ["--class", JAVA_PI_CLASS, f"local://{EXAMPLES_JAR}", "4", "50000"]
    done = submit_with_cli(real_plane, ns, real_submitter, "java-pi", app, SMALL_PODS)
    REAL_SPARK_TIMINGS["real node, CLI JavaPi: succeeded (CLI exit)"] = time.monotonic() - started
    recorder.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "finished: succeeded, Completed, exit code 0" in done.stdout + done.stderr
    (driver,) = recorder.names("driver")
    assert recorder.pods[driver]["spec"]["nodeName"] == "real-node-0"
    log = driver_log(real_admin, ns, driver)
    assert "Pi is roughly 3.1" in log, log[-3000:]
    assert "200000 samples in 4 partitions (JVM)" in log
    assert len(recorder.names("executor")) == 2, recorder.events
