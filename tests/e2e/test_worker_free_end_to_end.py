"""Worker-free tasks (`start_from_trigger=True`, issue 47) through the real Airflow 3.3
scheduler and triggerer, on real Spark on the real node (tests/e2e/e2e_dags/e2e_worker_free.py):
the example's pi succeeds with its XComs, an application error fails the task on its one try,
a user's kill (mark failed) deletes the driver, and a worker-free sensor follows the
application a worker-free task beside it submits, to its success, and two that find nothing end
at their timeout, skipped (soft_fail) and failed, in the triggerer. No task process starts for
any of them: the scheduler's log, where the LocalExecutor's workers log too, never enqueues
them.

The five DAG runs start at once (`worker_free_runs`); the kill is sent there, once the
long application's executor runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from testenv.airflow_stack import AirflowStack, wait_for
from testenv.harness import kube
from testenv.real_spark import PodRecorder
from tests.e2e.e2e_dags.e2e_worker_free import FAILURE_MESSAGE
from tests.e2e.e2e_stack import E2E_NAMESPACE, E2E_TIMINGS
from tests.e2e.test_airflow_end_to_end import messages, task_instance, task_log, xcom

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

PI, ERROR, KILL = "e2e_worker_free_pi", "e2e_worker_free_error", "e2e_worker_free_kill"
SENSOR, TIMEOUT = "e2e_worker_free_sensor", "e2e_worker_free_sensor_timeout"
TASK_OF = {PI: "spark_pi", ERROR: "raises", KILL: "killed", SENSOR: "follows", TIMEOUT: "fails"}


@dataclass
class WorkerFreeRun:
    dag_id: str
    run_id: str
    recorder: PodRecorder  # the DAG's pods

    @property
    def task_id(self) -> str:
        return TASK_OF[self.dag_id]


@pytest.fixture(scope="module")
def worker_free_runs(airflow: AirflowStack, real_plane: Any) -> Iterator[dict[str, WorkerFreeRun]]:
    runs: dict[str, WorkerFreeRun] = {}
    try:
        with airflow.client() as client:
            for dag_id in (KILL, PI, ERROR, SENSOR, TIMEOUT):
                recorder = PodRecorder(
                    real_plane, E2E_NAMESPACE, label_selector=f"sparkk8s.io/dag-id={dag_id}"
                ).start()
                airflow.wait_dag(client, dag_id)
                runs[dag_id] = WorkerFreeRun(dag_id, airflow.trigger(client, dag_id), recorder)
            kill = runs[KILL]
            wait_for(
                lambda: kill.recorder.reached("executor", "Running") or None,
                timeout=300,
                what=f"{KILL}'s executor running",
            )
            response = client.patch(
                f"/dags/{KILL}/dagRuns/{kill.run_id}/taskInstances/{kill.task_id}",
                json={"new_state": "failed"},
            )
            assert response.status_code == 200, response.text
        yield runs
    finally:
        for run in runs.values():
            run.recorder.stop()


def ended(airflow: AirflowStack, run: WorkerFreeRun) -> tuple[dict[str, Any], list[str]]:
    """The run's end: its task instance and the task's log lines."""
    with airflow.client() as client:
        finished = airflow.wait_run(client, run.dag_id, run.run_id, timeout=600)
        start, end = (datetime.fromisoformat(finished[key]) for key in ("start_date", "end_date"))
        E2E_TIMINGS[f"{run.dag_id}: run start -> {finished['state']}"] = (
            end - start
        ).total_seconds()
        ti = task_instance(client, run.dag_id, run.run_id, run.task_id)
        lines = messages(task_log(client, run.dag_id, run.run_id, run.task_id))
    return ti, lines


def assert_no_task_process(airflow: AirflowStack, dag_id: str) -> None:
    """The scheduler never handed the task to the executor, and no worker parsed its DAG."""
    log = airflow.log_file("scheduler").read_text(errors="replace").splitlines()
    enqueued = [line for line in log if "enqueue" in line and f"<TaskInstance: {dag_id}." in line]
    started = [line for line in log if "Worker startup" in line and f"dag_id={dag_id} " in line]
    assert enqueued == [] and started == [], enqueued + started


def test_a_worker_free_task_runs_real_spark_and_ends_with_its_xcom(
    airflow: AirflowStack, worker_free_runs: dict[str, WorkerFreeRun]
) -> None:
    run = worker_free_runs[PI]
    ti, lines = ended(airflow, run)
    shown = "\n".join(lines)
    assert ti["state"] == "success" and ti["try_number"] == 1, shown
    with airflow.client() as client:
        result = xcom(client, run.dag_id, run.run_id, run.task_id)
    (driver,) = run.recorder.names("driver")
    assert result["status"] == "success" and result["driver_pod"] == driver, result
    assert (result["state"], result["exit_code"]) == ("succeeded", 0), result
    # on_finish_action's default deleted the succeeded driver, from the triggerer.
    wait_for(lambda: run.recorder.gone(driver) or None, timeout=60, what=f"{driver} deleted")
    # The templated argument was rendered in the triggerer: 4 partitions.
    assert any("4000 samples in 4 partitions" in line for line in lines), shown
    assert_no_task_process(airflow, run.dag_id)


def test_a_worker_free_application_error_fails_the_task_in_the_triggerer(
    airflow: AirflowStack, worker_free_runs: dict[str, WorkerFreeRun]
) -> None:
    run = worker_free_runs[ERROR]
    ti, lines = ended(airflow, run)
    shown = "\n".join(lines)
    assert ti["state"] == "failed" and ti["try_number"] == 1, shown
    assert any(FAILURE_MESSAGE in line for line in lines), shown
    assert run.recorder.reached("driver", "Failed"), run.recorder.events
    assert_no_task_process(airflow, run.dag_id)


def test_a_worker_free_task_marked_failed_deletes_its_driver(
    airflow: AirflowStack, worker_free_runs: dict[str, WorkerFreeRun]
) -> None:
    run = worker_free_runs[KILL]
    ti, lines = ended(airflow, run)
    assert ti["state"] == "failed" and ti["try_number"] == 1, "\n".join(lines)
    (driver,) = run.recorder.names("driver")
    wait_for(
        lambda: (
            all(run.recorder.gone(n) for n in [driver, *run.recorder.names("executor")]) or None
        ),
        timeout=120,
        what=f"{driver} and its executors deleted by the kill",
    )
    assert not run.recorder.reached("driver", "Succeeded"), run.recorder.events
    assert_no_task_process(airflow, run.dag_id)


@pytest.fixture
def kept_driver_deleted(real_admin: Any) -> Iterator[None]:
    """The sensor scenario's submitter keeps its driver pod; it goes after the test."""
    yield
    pods = f"/api/v1/namespaces/{E2E_NAMESPACE}/pods"
    kube.request(
        real_admin,
        "DELETE",
        pods,
        params={"labelSelector": f"sparkk8s.io/dag-id={SENSOR},spark-role=driver"},
    )


def test_a_worker_free_sensor_follows_an_application_to_its_success(
    airflow: AirflowStack, worker_free_runs: dict[str, WorkerFreeRun], kept_driver_deleted: None
) -> None:
    run = worker_free_runs[SENSOR]
    ti, lines = ended(airflow, run)
    shown = "\n".join(lines)
    assert ti["state"] == "success" and ti["try_number"] == 1, shown
    with airflow.client() as client:
        followed = xcom(client, run.dag_id, run.run_id, run.task_id)
        submitted = xcom(client, run.dag_id, run.run_id, "submits")
    # The rendered label selector found the driver the task beside it submitted.
    (driver,) = run.recorder.names("driver")
    assert (followed["status"], followed["state"]) == ("success", "succeeded"), followed
    assert followed["driver_pod"] == driver, followed
    assert followed["application_id"] == submitted["application_id"], (followed, submitted)
    assert_no_task_process(airflow, run.dag_id)  # neither task had a worker


def test_worker_free_sensors_that_find_nothing_end_at_their_timeout_in_the_triggerer(
    airflow: AirflowStack, worker_free_runs: dict[str, WorkerFreeRun]
) -> None:
    run = worker_free_runs[TIMEOUT]
    failed, lines = ended(airflow, run)
    shown = "\n".join(lines)
    assert failed["state"] == "failed" and failed["try_number"] == 1, shown
    assert any("Sensor timed out (timeout=20s) in the triggerer" in line for line in lines), shown
    with airflow.client() as client:
        skipped = task_instance(client, run.dag_id, run.run_id, "skips")
        skipped_lines = messages(task_log(client, run.dag_id, run.run_id, "skips"))
    assert skipped["state"] == "skipped" and skipped["try_number"] == 1, skipped
    assert any("skipped (soft_fail)" in line for line in skipped_lines), skipped_lines
    # They waited out their window, counted from their start, and no longer.
    for ti in (failed, skipped):
        start, end = (datetime.fromisoformat(ti[key]) for key in ("start_date", "end_date"))
        assert 20 <= (end - start).total_seconds() < 80, ti
    assert run.recorder.names("driver") == []
    assert_no_task_process(airflow, run.dag_id)
