"""DAG runs through the real Airflow 3.3: REST trigger, scheduler, LocalExecutor worker,
deferral into the triggerer, resumption, XCom, task logs."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.e2e.airflow_stack import E2E_NAMESPACE, E2E_TIMINGS, AirflowStack

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

# Lines Airflow itself writes around a deferral: the worker parks the task, the
# triggerer runs and fires the trigger, then a worker starts the task again.
PARKED = "Pausing task as DEFERRED"
TRIGGER_STARTED = "starting"
TRIGGER_FIRED = "Trigger fired event"


def task_log(
    client: httpx.Client, dag_id: str, run_id: str, task_id: str, try_number: int = 1
) -> list[dict[str, Any]]:
    """The task's log as Airflow's structured events (worker and triggerer parts merged)."""
    response = client.get(
        f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}",
        headers={"Accept": "application/json"},
        params={"full_content": "true"},
    )
    response.raise_for_status()
    return [event for event in response.json()["content"] if isinstance(event, dict)]


def messages(events: list[dict[str, Any]]) -> list[str]:
    """One line per event; a failure's exception text is appended to its event."""
    lines = []
    for event in events:
        details = event.get("error_detail") or []
        raised = [
            f"{d.get('exc_type')}: {d.get('exc_value')}" for d in details if isinstance(d, dict)
        ]
        lines.append(" | ".join([str(event.get("event", "")), *raised]))
    return lines


def first_index(lines: list[str], needle: str, start: int = 0) -> int:
    for index in range(start, len(lines)):
        if needle in lines[index]:
            return index
    raise AssertionError(f"{needle!r} not in the log after line {start}:\n" + "\n".join(lines))


def task_instance(client: httpx.Client, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    response = client.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}")
    response.raise_for_status()
    return dict(response.json())


def xcom(client: httpx.Client, dag_id: str, run_id: str, task_id: str) -> Any:
    response = client.get(
        f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value"
    )
    response.raise_for_status()
    return response.json()["value"]


def assert_deferred_then_resumed(lines: list[str], resumed_marker: str) -> None:
    """The order that proves a round trip through the triggerer: parked by the worker,
    trigger started and fired in the triggerer, then the resumed method ran."""
    parked = first_index(lines, PARKED)
    started = first_index(lines, TRIGGER_STARTED, parked)
    fired = first_index(lines, TRIGGER_FIRED, started)
    first_index(lines, resumed_marker, fired)


def run_dag(
    stack: AirflowStack, client: httpx.Client, dag_id: str, task_id: str, label: str, expected: str
) -> tuple[dict[str, Any], list[str]]:
    """Trigger `dag_id`, wait for its end, and return the run and the task's log lines;
    a run that ends otherwise than `expected` fails with the log and the scheduler's tail."""
    stack.wait_dag(client, dag_id)
    started = time.monotonic()
    run_id = stack.trigger(client, dag_id)
    run = stack.wait_run(client, dag_id, run_id)
    E2E_TIMINGS[f"{label}: trigger -> run {run['state']}"] = time.monotonic() - started
    lines = messages(task_log(client, dag_id, run_id, task_id))
    assert run["state"] == expected, (
        "\n".join(lines) + "\n--- scheduler ---\n" + stack.tail("scheduler", 60)
    )
    return run, lines


def test_probe_dag_defers_into_the_triggerer_and_resumes(airflow: AirflowStack) -> None:
    """No provider code: proves scheduler, executor, triggerer and log merging work."""
    with airflow.client() as client:
        run, lines = run_dag(
            airflow, client, "probe_deferral", "defer_once", "probe DAG", "success"
        )
        ti = task_instance(client, "probe_deferral", run["dag_run_id"], "defer_once")
        assert ti["state"] == "success"
        # Resuming after a deferral continues the same try instead of starting a new one.
        assert ti["try_number"] == 1
        assert_deferred_then_resumed(lines, "probe: resumed after deferral")
        assert xcom(client, "probe_deferral", run["dag_run_id"], "defer_once") == {"answer": 42}


FAILURE_MESSAGE = "java.lang.IllegalStateException: e2e failure on purpose"
# The SparkPi test's task log, for the driver-log test after it.
SPARK_PI_LOG: list[str] = []


def test_spark_pi_defers_succeeds_and_pushes_its_xcom(airflow: AirflowStack) -> None:
    """The example DAG dags/spark_pi.py, as a user would run it."""
    dag_id, task_id = "spark_pi", "spark_pi"
    with airflow.client() as client:
        run, lines = run_dag(airflow, client, dag_id, task_id, "SparkPi example", "success")
        ti = task_instance(client, dag_id, run["dag_run_id"], task_id)
        assert ti["state"] == "success" and ti["try_number"] == 1
        assert ti["operator"] == "SparkK8sSubmitOperator"
        first_index(lines, "Created Pod/")
        first_index(lines, "Deferring: the triggerer follows")
        assert_deferred_then_resumed(lines, "succeeded in")
        result = xcom(client, dag_id, run["dag_run_id"], task_id)
        assert result["status"] == "success" and result["exit_code"] == 0
        assert result["namespace"] == E2E_NAMESPACE
        assert result["application_id"].startswith("spark-")
        assert result["driver_pod"].endswith("-driver")
        SPARK_PI_LOG.extend(lines)


def test_spark_pi_task_log_holds_driver_log_lines(airflow: AirflowStack) -> None:
    """The trigger streams the driver's log into the task's log."""
    if not SPARK_PI_LOG:
        pytest.skip("the SparkPi run above did not succeed")
    driver_lines = [line for line in SPARK_PI_LOG if line.startswith("[driver]")]
    # The control plane's KWOK serves a generated SparkPi driver log (testenv/kwok_logs.py).
    assert any("INFO SparkContext: Running Spark version" in line for line in driver_lines), (
        "\n".join(SPARK_PI_LOG)
    )
    assert any("Pi is roughly 3.14" in line for line in driver_lines), "\n".join(SPARK_PI_LOG)
    # However often the trigger polled, each line is copied once.
    assert len(driver_lines) == len(set(driver_lines)), "\n".join(driver_lines)


def test_failing_application_fails_the_task_with_its_reason(airflow: AirflowStack) -> None:
    dag_id, task_id = "e2e_spark_failure", "spark_fails"
    with airflow.client() as client:
        run, lines = run_dag(airflow, client, dag_id, task_id, "failing application", "failed")
        ti = task_instance(client, dag_id, run["dag_run_id"], task_id)
        assert ti["state"] == "failed"
        assert_deferred_then_resumed(lines, "ApplicationFailed")
        failure = lines[first_index(lines, "ApplicationFailed")]
        assert "exit code 1" in failure and FAILURE_MESSAGE in failure, failure
