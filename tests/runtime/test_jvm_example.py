"""The README's JVM example on real Spark (issue 29, papercut 12): JavaPi, built from
testenv/image/jvm into the local image's sparkk8s-examples.jar by testenv/runtime_image.py,
submitted by sparkk8s-submit as the README says, on the node agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.runtime_image import EXAMPLES_JAR, JAVA_PI_CLASS
from tests.support.real_spark import PodRecorder, driver_log, submit_with_cli

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]


def test_the_readme_jvm_example_computes_pi_on_two_executors(
    runtime_plane: ControlPlane, runtime_namespace: str, submitter: Path, runtime_admin: ApiClient
) -> None:
    ns = runtime_namespace
    recorder = PodRecorder(runtime_plane, ns).start()
    app = ["--class", JAVA_PI_CLASS, f"local://{EXAMPLES_JAR}", "4", "50000"]
    done = submit_with_cli(runtime_plane, ns, submitter, "java-pi", app)
    recorder.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "finished: succeeded, Completed, exit code 0" in done.stdout + done.stderr
    (driver,) = recorder.names("driver")
    log = driver_log(runtime_admin, ns, driver)
    assert "Pi is roughly 3.1" in log, log[-3000:]
    assert "200000 samples in 4 partitions (JVM)" in log
    assert len(recorder.names("executor")) == 2, recorder.events
