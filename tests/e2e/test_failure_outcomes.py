"""Failure kinds through real Airflow 3.3 and real Spark on the real node: what the retry
policy decides for each, the task's final state and try number, the XCom, and what is left
in the namespace (the DAGs are tests/e2e/e2e_dags/e2e_outcomes.py).

The three DAG runs start at once (`outcome_runs`), and the driver to be deleted is deleted
there, while it computes: the runs mostly wait on Spark and on retry delays, and those waits
overlap. Each test reads its own run, and watches its DAG's pods alone (by the task identity's
`sparkk8s.io/dag-id` label)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pytest

from testenv.admin_client import AdminHttp
from testenv.airflow_stack import AirflowStack, wait_for
from testenv.harness import kube
from testenv.real_spark import PodRecorder
from tests.e2e.e2e_stack import E2E_NAMESPACE, E2E_TIMINGS
from tests.e2e.test_airflow_end_to_end import (
    first_index,
    messages,
    runtime_log,
    task_instance,
    task_log,
    xcom,
)

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

NAMESPACE = f"/api/v1/namespaces/{E2E_NAMESPACE}"
POLICY_DECISION = "Retry policy decision"  # Airflow's task runner logs the policy's reason


def application_xcom(client: httpx.Client, dag_id: str, run_id: str, task_id: str) -> Any:
    response = client.get(
        f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/spark_application"
    )
    response.raise_for_status()
    return response.json()["value"]


def policy_lines(lines: list[str], events: list[dict[str, Any]]) -> list[str]:
    """The policy's decisions with their reasons (structured fields of the log event)."""
    return [
        f"{event.get('action')}: {event.get('reason')}"
        for event in events
        if event.get("event") == POLICY_DECISION
    ]


def assert_nothing_left(real_admin: Any, recorder: PodRecorder, dag_id: str) -> None:
    """No pod of the DAG, and nothing its drivers owned (ConfigMaps, Services), once the
    garbage collector has had its turn."""
    drivers = {
        pod["metadata"]["uid"] for pod in recorder.pods.values() if pod["metadata"].get("uid")
    }

    def left() -> list[str]:
        found = []
        pods = kube.request(
            real_admin,
            "GET",
            f"{NAMESPACE}/pods",
            params={"labelSelector": f"sparkk8s.io/dag-id={dag_id}"},
        )["items"]
        found += [f"pod/{p['metadata']['name']}" for p in pods]
        for kind in ("configmaps", "services"):
            for item in kube.request(real_admin, "GET", f"{NAMESPACE}/{kind}")["items"]:
                owners = {o.get("uid") for o in item["metadata"].get("ownerReferences") or []}
                if owners & drivers:
                    found.append(f"{kind}/{item['metadata']['name']}")
        return found

    wait_for(lambda: not left() or None, timeout=120, what=f"nothing of {dag_id} left")
    assert left() == []


ERROR, DELETED, OOM = (
    "e2e_outcome_application_error",
    "e2e_outcome_deleted_driver",
    "e2e_outcome_out_of_memory",
)


@dataclass
class OutcomeRun:
    dag_id: str
    run_id: str
    recorder: PodRecorder  # the DAG's pods
    victim: str = ""  # the deleted-driver DAG's first driver, deleted by `outcome_runs`


def dag_pods(real_plane: Any, dag_id: str) -> PodRecorder:
    return PodRecorder(real_plane, E2E_NAMESPACE, label_selector=f"sparkk8s.io/dag-id={dag_id}")


@pytest.fixture(scope="module")
def outcome_runs(airflow: AirflowStack, real_plane: Any) -> Iterator[dict[str, OutcomeRun]]:
    runs: dict[str, OutcomeRun] = {}
    try:
        with airflow.client() as client:
            for dag_id in (DELETED, ERROR, OOM):
                recorder = dag_pods(real_plane, dag_id).start()
                airflow.wait_dag(client, dag_id)
                runs[dag_id] = OutcomeRun(dag_id, airflow.trigger(client, dag_id), recorder)
        deleted = runs[DELETED]

        def computing() -> str | None:
            drivers = deleted.recorder.reached("driver", "Running")
            if not drivers or not deleted.recorder.reached("executor", "Running"):
                return None
            log = runtime_log(real_plane, E2E_NAMESPACE, drivers[0])
            return drivers[0] if "Starting task" in log else None

        deleted.victim = wait_for(computing, timeout=300, what="the first driver computing")
        admin = AdminHttp.from_kubeconfig(real_plane.admin_kubeconfig)
        admin.json("DELETE", f"{NAMESPACE}/pods/{deleted.victim}")
        yield runs
    finally:
        for run in runs.values():
            run.recorder.stop()


def wait_run(airflow: AirflowStack, client: httpx.Client, run: OutcomeRun, label: str) -> Any:
    ended = airflow.wait_run(client, run.dag_id, run.run_id, timeout=800)
    # The run's own clock: the runs overlap, so the time until this test looked is not it.
    start, end = (datetime.fromisoformat(ended[key]) for key in ("start_date", "end_date"))
    E2E_TIMINGS[f"{label}: run start -> {ended['state']}"] = (end - start).total_seconds()
    return ended


def test_an_application_error_fails_on_try_one_despite_retries(
    airflow: AirflowStack, outcome_runs: dict[str, OutcomeRun], real_admin: Any
) -> None:
    """fail.py raises; retries=3, no retry_policy given: the operator's default policy
    fails it at once, and says why in the task log."""
    dag_id, task_id = ERROR, "raises"
    recorder, run_id = outcome_runs[dag_id].recorder, outcome_runs[dag_id].run_id
    with airflow.client() as client:
        run = wait_run(airflow, client, outcome_runs[dag_id], "application error")
        events = task_log(client, dag_id, run_id, task_id, 1)
        lines = messages(events)
        assert run["state"] == "failed", "\n".join(lines)
        ti = task_instance(client, dag_id, run_id, task_id)
        assert (ti["state"], ti["try_number"]) == ("failed", 1), ti
        failure = lines[first_index(lines, "ApplicationError")]
        assert "[application_error]" in failure and "e2e outcome: failing on purpose" in failure
        decisions = policy_lines(lines, events)
        assert decisions and decisions[0].startswith("fail: application error, not retried"), (
            decisions
        )
        result = application_xcom(client, dag_id, run_id, task_id)
        assert (result["reason"], result["cause"], result["exit_code"]) == (
            "application_error",
            "Error",
            1,
        ), result
        assert result["exception"] == "RuntimeError: e2e outcome: failing on purpose"
        recorder.stop()
        (driver,) = recorder.names("driver")  # one try, one driver
        # Spark 4.3's driver wrote its exit exception on its own pod (the operator's default
        # spark.kubernetes.driver.annotateExitException=true; the driver Role may patch).
        annotations = recorder.pods[driver]["metadata"].get("annotations") or {}
        print("spark.exit-exception:", annotations.get("spark.exit-exception"))
        assert "spark.exit-exception" in annotations, annotations
        assert result["exit_exception"] == annotations["spark.exit-exception"].splitlines()[0]
        assert_nothing_left(real_admin, recorder, dag_id)


def test_a_driver_deleted_by_someone_else_is_retried_and_succeeds(
    airflow: AirflowStack, outcome_runs: dict[str, OutcomeRun], real_admin: Any
) -> None:
    dag_id, task_id = DELETED, "deleted"
    recorder, run_id = outcome_runs[dag_id].recorder, outcome_runs[dag_id].run_id
    victim = outcome_runs[dag_id].victim
    with airflow.client() as client:
        first_app = recorder.pods[victim]["metadata"]["labels"]["spark-app-selector"]
        run = wait_run(airflow, client, outcome_runs[dag_id], "deleted driver")
        first = task_log(client, dag_id, run_id, task_id, 1)
        second = messages(task_log(client, dag_id, run_id, task_id, 2))
        assert run["state"] == "success", "\n".join([*messages(first), "--- try 2", *second])
        ti = task_instance(client, dag_id, run_id, task_id)
        assert (ti["state"], ti["try_number"]) == ("success", 2), ti
        decisions = policy_lines(messages(first), first)
        assert decisions and decisions[0].startswith("retry: infrastructure failure"), decisions
        first_index(messages(first), "[infrastructure]")
        result = xcom(client, dag_id, run_id, task_id)
        assert (result["status"], result["reason"]) == ("success", "succeeded"), result
        # Try 2 found no live driver of its task instance, so it submitted again: a new
        # application, in a pod of the next number (never below the try number).
        assert result["application_id"] != first_app
        (again,) = [name for name in recorder.names("driver") if name != victim]
        assert again.endswith("-2-driver") and result["driver_pod"] == again, again
        events = [(e.name, e.kind) for e in recorder.events]
        # submitted after the victim went, and gone too at the end (delete_pod)
        assert events.index((victim, "DELETED")) < events.index((again, "ADDED")), events
        # The task deletes its driver as it ends (delete_pod); the watch sees it a moment later.
        wait_for(lambda: recorder.gone(again) or None, timeout=60, what=f"{again} gone")
        assert recorder.gone(victim), events
        recorder.stop()
        assert_nothing_left(real_admin, recorder, dag_id)


def test_an_out_of_memory_driver_is_retried_once_with_more_memory(
    airflow: AirflowStack, outcome_runs: dict[str, OutcomeRun], real_admin: Any
) -> None:
    dag_id, task_id = OOM, "oom"
    recorder, run_id = outcome_runs[dag_id].recorder, outcome_runs[dag_id].run_id
    with airflow.client() as client:
        run = wait_run(airflow, client, outcome_runs[dag_id], "out of memory")
        first = task_log(client, dag_id, run_id, task_id, 1)
        second = messages(task_log(client, dag_id, run_id, task_id, 2))
        assert run["state"] == "success", "\n".join([*messages(first), "--- try 2", *second])
        ti = task_instance(client, dag_id, run_id, task_id)
        assert (ti["state"], ti["try_number"]) == ("success", 2), ti
        lines = messages(first)
        failure = lines[first_index(lines, "DriverOutOfMemory")]
        assert "OOMKilled" in failure, failure
        decisions = policy_lines(lines, first)
        assert decisions and decisions[0].startswith("retry: driver out of memory"), decisions
        first_index(lines, "it ran out of memory, and the retry reads it")
        first_index(second, "ran out of memory: submitting with spark.driver.memory=1024m")
        result = xcom(client, dag_id, run_id, task_id)
        assert result["driver_memory"] == {
            "used": {"spark.driver.memory": "1024m", "spark.driver.memoryOverhead": "768m"},
            "raised_from": {"spark.driver.memory": "512m", "spark.driver.memoryOverhead": "384m"},
            "factor": 2.0,
        }, result
        recorder.stop()
        drivers = recorder.names("driver")
        assert len(drivers) == 2, recorder.events
        limits = [
            recorder.pods[name]["spec"]["containers"][0]["resources"]["limits"]["memory"]
            for name in drivers
        ]
        assert sorted(limits) == ["1792Mi", "896Mi"], limits
        oom_pod = next(n for n in drivers if n != result["driver_pod"])
        # The real kubelet's report of its container: the kernel's OOM killer, inside the
        # container's memory cgroup (limit 896Mi), killed it, and the exit code says SIGKILL.
        status = recorder.pods[oom_pod]["status"]["containerStatuses"][0]["state"]
        print(f"{oom_pod}: {status}")
        terminated = status["terminated"]
        assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137), status
        assert_nothing_left(real_admin, recorder, dag_id)
