"""Timeouts that hold, through the real Airflow 3.3 and real Spark (tests/e2e/e2e_dags/
e2e_timeouts.py): a task whose application runs far longer than its `execution_timeout`
fails by that timeout on its one try, deferred or in a worker, and nothing of its
application is left: no driver, executor, Service or ConfigMap in the namespace, and no
upload folder. The same for the sensor, poking and deferred, on an application submitted
with sparkk8s-submit, with `delete_on_timeout`. On the real node."""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx
import pytest

from testenv.harness import kube
from tests.e2e.airflow_stack import E2E_TIMEOUT_NAMESPACE, E2E_TIMINGS, AirflowStack, wait_for
from tests.e2e.e2e_dags.e2e_timeouts import UPLOAD_DIR
from tests.e2e.real_node_pods import SMALL_PODS
from tests.e2e.test_airflow_end_to_end import PARKED, first_index, messages, task_instance, task_log
from tests.support.real_spark import PI, PodRecorder, submit_with_cli

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

NAMESPACE = f"/api/v1/namespaces/{E2E_TIMEOUT_NAMESPACE}"
LIMIT = "execution_timeout=100s"  # the worker-side DAG's (140 s deferred, 50 s the sensors)


def left_in_namespace(admin: Any) -> list[str]:
    """What is left: every pod, Service and ConfigMap (but the namespace's own CA bundle)."""
    left = []
    for kind in ("pods", "services", "configmaps"):
        for item in kube.request(admin, "GET", f"{NAMESPACE}/{kind}")["items"]:
            name = item["metadata"]["name"]
            if name != "kube-root-ca.crt":
                left.append(f"{kind}/{name}")
    return left


def assert_nothing_left(admin: Any) -> None:
    # The garbage collector takes what the driver pod owned a moment after the pod.
    wait_for(
        lambda: not left_in_namespace(admin) or None,
        timeout=120,
        what=f"nothing left in {E2E_TIMEOUT_NAMESPACE} (left: {left_in_namespace(admin)})",
    )


def run_to_failure(
    stack: AirflowStack,
    client: httpx.Client,
    dag_id: str,
    task_id: str,
    needle: str,
    conf: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Trigger `dag_id` and wait for its end; the task instance and its log lines once the
    log holds `needle` (the worker's part reaches the merged log a little after the end)."""
    stack.wait_dag(client, dag_id)
    started = time.monotonic()
    run_id = stack.trigger(client, dag_id, conf or {})
    run = stack.wait_run(client, dag_id, run_id, timeout=600)
    E2E_TIMINGS[f"{dag_id}: trigger -> run {run['state']}"] = time.monotonic() - started
    lines: list[str] = []

    def logged() -> bool | None:
        lines[:] = messages(task_log(client, dag_id, run_id, task_id))
        return any(needle in line for line in lines) or None

    try:
        wait_for(logged, timeout=60, what=f"{needle!r} in the task log")
    finally:
        print("\n".join(lines))
    assert run["state"] == "failed", "\n".join(lines) + "\n" + stack.tail("scheduler", 60)
    return task_instance(client, dag_id, run_id, task_id), lines


def test_a_deferred_task_past_its_execution_timeout_fails_and_leaves_nothing(
    airflow: AirflowStack, real_plane: Any, real_admin: Any
) -> None:
    recorder = PodRecorder(real_plane, E2E_TIMEOUT_NAMESPACE).start()
    with airflow.client() as client:
        ti, lines = run_to_failure(
            airflow, client, "e2e_timeout_deferred", "spark_deferred", "TaskDeferralTimeout"
        )
    assert_nothing_left(real_admin)
    recorder.stop()
    assert ti["state"] == "failed" and ti["try_number"] == 1
    first_index(lines, "startup_timeout=300s never fires")
    parked = first_index(lines, PARKED)
    failure = lines[first_index(lines, "TaskDeferralTimeout", parked)]
    (driver,) = recorder.names("driver")
    assert "execution_timeout=140s passed while deferred" in failure, failure
    assert f":{driver})" in failure and "ran for " in failure, failure
    # It timed out mid-job: both executors computed, the driver never finished (its
    # deletion stopped it, so its pod ended Failed as it went).
    assert len(recorder.reached("executor", "Running")) == 2, recorder.events
    assert not recorder.reached("driver", "Succeeded"), recorder.events
    assert all(recorder.gone(name) for name in [driver, *recorder.names("executor")])


def test_a_task_in_the_worker_past_its_execution_timeout_removes_its_uploads(
    airflow: AirflowStack, real_plane: Any, real_admin: Any
) -> None:
    """Issue 29: the driver went, its spark-upload-<uuid>/ folder stayed."""
    UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
    recorder = PodRecorder(real_plane, E2E_TIMEOUT_NAMESPACE).start()
    with airflow.client() as client:
        ti, lines = run_to_failure(
            airflow,
            client,
            "e2e_timeout_worker_uploads",
            "spark_in_worker",
            "Removed the uploaded files",
        )
    assert_nothing_left(real_admin)
    recorder.stop()
    assert ti["state"] == "failed" and ti["try_number"] == 1
    uploaded = lines[first_index(lines, "Uploaded ")]
    assert f"file://{UPLOAD_DIR}/spark-upload-" in uploaded, uploaded
    failure = lines[first_index(lines, "AirflowTaskTimeout")]
    (driver,) = recorder.names("driver")
    assert f"{LIMIT} passed" in failure and driver in failure and "ran for " in failure, failure
    first_index(lines, f"Deleted driver pod {E2E_TIMEOUT_NAMESPACE}:{driver} (task killed)")
    assert len(recorder.reached("executor", "Running")) == 2, recorder.events
    assert not list(UPLOAD_DIR.glob("spark-upload-*")), list(UPLOAD_DIR.iterdir())


def submit_elsewhere(airflow: AirflowStack, real_plane: Any, recorder: PodRecorder) -> str:
    """A long application submitted with sparkk8s-submit (not by Airflow): its driver pod."""
    driver = f"sensed-{secrets.token_hex(3)}-driver"
    submitted = submit_with_cli(
        real_plane,
        E2E_TIMEOUT_NAMESPACE,
        airflow.home.parent / "real-submitter.kubeconfig",
        "sensed",
        [PI, "1200", "3000000"],
        {
            "spark.kubernetes.driver.pod.name": driver,
            "spark.kubernetes.submission.waitAppCompletion": "false",
            **SMALL_PODS,
        },
    )
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    wait_for(
        lambda: driver in recorder.reached("driver", "Running") or None,
        timeout=300,
        what=f"driver {driver} running",
    )
    return driver


@pytest.mark.parametrize(
    ("dag_id", "task_id", "raised"),
    [
        # execution_timeout's signal while poking: the sensor deletes, then re-raises it.
        ("e2e_timeout_poking_sensor", "sensor_poking", "AirflowTaskTimeout"),
        # the deferral's timeout (execution_timeout's rest): the sensor's own timeout error.
        ("e2e_timeout_deferred_sensor", "sensor_deferred", "AirflowSensorTimeout"),
    ],
)
def test_a_sensor_past_its_execution_timeout_deletes_the_application_it_waits_for(
    airflow: AirflowStack,
    real_plane: Any,
    real_admin: Any,
    dag_id: str,
    task_id: str,
    raised: str,
) -> None:
    recorder = PodRecorder(real_plane, E2E_TIMEOUT_NAMESPACE).start()
    driver = submit_elsewhere(airflow, real_plane, recorder)
    with airflow.client() as client:
        ti, lines = run_to_failure(
            airflow, client, dag_id, task_id, raised, conf={"driver_pod": driver}
        )
    assert_nothing_left(real_admin)
    recorder.stop()
    assert ti["state"] == "failed" and ti["try_number"] == 1
    failure = lines[first_index(lines, raised)]
    assert f"driver pod {E2E_TIMEOUT_NAMESPACE}:{driver}" in failure, failure
    assert "ran for " in failure and "was deleted" in failure, failure
    if task_id == "sensor_deferred":
        first_index(lines, PARKED)
    assert not recorder.reached("driver", "Succeeded")
    assert all(recorder.gone(name) for name in [driver, *recorder.names("executor")])
