"""Timeouts that hold, through the real Airflow 3.3 and real Spark (tests/e2e/e2e_dags/
e2e_timeouts.py): a task whose application runs far longer than its `execution_timeout`
fails by that timeout on its one try, deferred or in a worker, and nothing of its
application is left: no driver, executor, Service or ConfigMap in the namespace, and no
upload folder. The same for the sensor, poking and deferred, on an application submitted
with sparkk8s-submit, with `delete_on_timeout`. On the real node.

The four DAG runs start at once (`timeout_runs`): each mostly waits for its timeout, and
those waits overlap (the longest, 120 s, and its set-up, for the four; one after the other
took 407 s, when the limits were 150 s and 180 s). Each
DAG has a namespace of its own, so what one leaves cannot be blamed on another."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from testenv.airflow_stack import AirflowStack, wait_for
from testenv.harness import kube
from testenv.real_spark import PI, PodRecorder, submit_with_cli
from tests.e2e.e2e_dags.e2e_timeouts import (
    DEFERRED_EXECUTION_TIMEOUT,
    LONG_PI,
    NAMESPACE_OF,
    UPLOAD_DIR,
    WORKER_EXECUTION_TIMEOUT,
)
from tests.e2e.e2e_stack import E2E_TIMINGS
from tests.e2e.real_node_pods import SMALL_PODS
from tests.e2e.test_airflow_end_to_end import PARKED, first_index, messages, task_instance, task_log

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

DEFERRED, WORKER = "e2e_timeout_deferred", "e2e_timeout_worker_uploads"
POKING, DEFERRED_SENSOR = "e2e_timeout_poking_sensor", "e2e_timeout_deferred_sensor"
# The worker-side DAG's and the deferred one's, as the failures print them.
LIMIT = f"execution_timeout={WORKER_EXECUTION_TIMEOUT.total_seconds():.0f}s"
DEFERRED_LIMIT = f"execution_timeout={DEFERRED_EXECUTION_TIMEOUT.total_seconds():.0f}s"


def left_in_namespace(admin: Any, namespace: str) -> list[str]:
    """What is left: every pod, Service and ConfigMap (but the namespace's own CA bundle)."""
    left = []
    for kind in ("pods", "services", "configmaps"):
        for item in kube.request(admin, "GET", f"/api/v1/namespaces/{namespace}/{kind}")["items"]:
            name = item["metadata"]["name"]
            if name != "kube-root-ca.crt":
                left.append(f"{kind}/{name}")
    return left


def assert_nothing_left(admin: Any, namespace: str) -> None:
    # The garbage collector takes what the driver pod owned a moment after the pod.
    wait_for(
        lambda: not left_in_namespace(admin, namespace) or None,
        timeout=120,
        what=f"nothing left in {namespace} (left: {left_in_namespace(admin, namespace)})",
    )


@dataclass
class TimeoutRun:
    """One DAG's run, started by `timeout_runs`, and the pods of its namespace."""

    dag_id: str
    task_id: str
    run_id: str
    recorder: PodRecorder
    driver: str | None = None  # the sensor's application, submitted elsewhere

    @property
    def namespace(self) -> str:
        return NAMESPACE_OF[self.dag_id]


def submit_elsewhere(airflow: AirflowStack, real_plane: Any, namespace: str) -> str:
    """A long application submitted with sparkk8s-submit (not by Airflow): its driver pod."""
    driver = f"sensed-{secrets.token_hex(3)}-driver"
    submitted = submit_with_cli(
        real_plane,
        namespace,
        airflow.home.parent / "real-submitter.kubeconfig",
        "sensed",
        [PI, *LONG_PI],
        {
            "spark.kubernetes.driver.pod.name": driver,
            "spark.kubernetes.submission.waitAppCompletion": "false",
            # One executor: the sensors' tests check only that what ran went, and the two
            # Spark tasks' executors start beside these on the same two cores.
            "spark.executor.instances": "1",
            **SMALL_PODS,
        },
    )
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    return driver


def driver_running(recorder: PodRecorder, driver: str) -> bool | None:
    return driver in recorder.reached("driver", "Running") or None


@pytest.fixture(scope="module")
def timeout_runs(airflow: AirflowStack, real_plane: Any) -> Iterator[dict[str, TimeoutRun]]:
    """Starts the four DAG runs: the two Spark tasks first, then the sensors, each once the
    application it waits for (submitted here with sparkk8s-submit) has a running driver."""
    UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
    runs: dict[str, TimeoutRun] = {}
    with airflow.client() as client:

        def start(dag_id: str, task_id: str, recorder: PodRecorder, **conf: str) -> None:
            airflow.wait_dag(client, dag_id)
            run_id = airflow.trigger(client, dag_id, conf)
            runs[dag_id] = TimeoutRun(dag_id, task_id, run_id, recorder)
            runs[dag_id].driver = conf.get("driver_pod")

        try:
            for dag_id, task_id in ((DEFERRED, "spark_deferred"), (WORKER, "spark_in_worker")):
                start(dag_id, task_id, PodRecorder(real_plane, NAMESPACE_OF[dag_id]).start())
            sensed = {}
            for dag_id in (POKING, DEFERRED_SENSOR):
                recorder = PodRecorder(real_plane, NAMESPACE_OF[dag_id]).start()
                sensed[dag_id] = (
                    recorder,
                    submit_elsewhere(airflow, real_plane, NAMESPACE_OF[dag_id]),
                )
            for (dag_id, task_id), (recorder, driver) in zip(
                ((POKING, "sensor_poking"), (DEFERRED_SENSOR, "sensor_deferred")),
                sensed.values(),
                strict=True,
            ):
                wait_for(
                    functools.partial(driver_running, recorder, driver),
                    timeout=300,
                    what=f"driver {driver} running",
                )
                start(dag_id, task_id, recorder, driver_pod=driver)
            yield runs
        finally:
            for run in runs.values():
                run.recorder.stop()


def run_to_failure(
    airflow: AirflowStack, run: TimeoutRun, needle: str
) -> tuple[dict[str, Any], list[str]]:
    """Waits for `run`'s end; its task instance and its log lines once the log holds `needle`
    (the worker's part reaches the merged log a little after the end)."""
    with airflow.client() as client:
        ended = airflow.wait_run(client, run.dag_id, run.run_id, timeout=600)
        # The run's own clock: the runs overlap, so the time until this test looked is not it.
        start, end = (datetime.fromisoformat(ended[key]) for key in ("start_date", "end_date"))
        E2E_TIMINGS[f"{run.dag_id}: run start -> {ended['state']}"] = (end - start).total_seconds()
        lines: list[str] = []

        def logged() -> bool | None:
            lines[:] = messages(task_log(client, run.dag_id, run.run_id, run.task_id))
            return any(needle in line for line in lines) or None

        try:
            wait_for(logged, timeout=60, what=f"{needle!r} in the task log")
        finally:
            print("\n".join(lines))
        assert ended["state"] == "failed", "\n".join(lines) + "\n" + airflow.tail("scheduler", 60)
        return task_instance(client, run.dag_id, run.run_id, run.task_id), lines


def executors_ran(run: TimeoutRun) -> None:
    """Both executors ran before the limit: the margin it left goes to the run's timings."""
    running = [
        e.seconds for e in run.recorder.events if e.role == "executor" and e.phase == "Running"
    ]
    assert len(running) == 2, run.recorder.events
    E2E_TIMINGS[f"{run.dag_id}: run start -> both executors Running"] = max(running)


def test_a_deferred_task_past_its_execution_timeout_fails_and_leaves_nothing(
    airflow: AirflowStack, timeout_runs: dict[str, TimeoutRun], real_admin: Any
) -> None:
    run = timeout_runs[DEFERRED]
    ti, lines = run_to_failure(airflow, run, "TaskDeferralTimeout")
    assert_nothing_left(real_admin, run.namespace)
    recorder = run.recorder
    recorder.stop()
    assert ti["state"] == "failed" and ti["try_number"] == 1
    first_index(lines, "startup_timeout=300s never fires")
    parked = first_index(lines, PARKED)
    failure = lines[first_index(lines, "TaskDeferralTimeout", parked)]
    (driver,) = recorder.names("driver")
    assert f"{DEFERRED_LIMIT} passed while deferred" in failure, failure
    assert f":{driver})" in failure and "ran for " in failure, failure
    # It timed out mid-job: both executors computed, the driver never finished (its
    # deletion stopped it, so its pod ended Failed as it went).
    executors_ran(run)
    assert not recorder.reached("driver", "Succeeded"), recorder.events
    assert all(recorder.gone(name) for name in [driver, *recorder.names("executor")])


def test_a_task_in_the_worker_past_its_execution_timeout_removes_its_uploads(
    airflow: AirflowStack, timeout_runs: dict[str, TimeoutRun], real_admin: Any
) -> None:
    """Issue 29: the driver went, its spark-upload-<uuid>/ folder stayed."""
    run = timeout_runs[WORKER]
    ti, lines = run_to_failure(airflow, run, "Removed the uploaded files")
    assert_nothing_left(real_admin, run.namespace)
    recorder = run.recorder
    recorder.stop()
    assert ti["state"] == "failed" and ti["try_number"] == 1
    uploaded = lines[first_index(lines, "Uploaded ")]
    assert f"file://{UPLOAD_DIR}/spark-upload-" in uploaded, uploaded
    failure = lines[first_index(lines, "AirflowTaskTimeout")]
    (driver,) = recorder.names("driver")
    assert f"{LIMIT} passed" in failure and driver in failure and "ran for " in failure, failure
    first_index(lines, f"Deleted driver pod {run.namespace}/{driver} (task killed)")
    executors_ran(run)
    assert not list(UPLOAD_DIR.glob("spark-upload-*")), list(UPLOAD_DIR.iterdir())


@pytest.mark.parametrize(
    ("dag_id", "raised"),
    [
        # execution_timeout's signal while poking: the sensor deletes, then re-raises it.
        (POKING, "AirflowTaskTimeout"),
        # the deferral's timeout (execution_timeout's rest): the sensor's own timeout error.
        (DEFERRED_SENSOR, "AirflowSensorTimeout"),
    ],
)
def test_a_sensor_past_its_execution_timeout_deletes_the_application_it_waits_for(
    airflow: AirflowStack,
    timeout_runs: dict[str, TimeoutRun],
    real_admin: Any,
    dag_id: str,
    raised: str,
) -> None:
    run = timeout_runs[dag_id]
    ti, lines = run_to_failure(airflow, run, raised)
    assert_nothing_left(real_admin, run.namespace)
    recorder, driver = run.recorder, run.driver
    recorder.stop()
    assert ti["state"] == "failed" and ti["try_number"] == 1
    failure = lines[first_index(lines, raised)]
    assert f"driver pod {run.namespace}:{driver}" in failure, failure
    assert "ran for " in failure and "was deleted" in failure, failure
    if dag_id == DEFERRED_SENSOR:
        first_index(lines, PARKED)
    assert not recorder.reached("driver", "Succeeded")
    assert driver is not None
    assert all(recorder.gone(name) for name in [driver, *recorder.names("executor")])
