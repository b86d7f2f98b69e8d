"""A paused triggerer's triggers move to another, and nothing healthy is killed (issue 43).

Two real Airflow triggerers on PostgreSQL, as in production, and ten deferred applications
held Running by KWOK (every third exits 3 once released). The triggerer that holds all ten
is paused (SIGSTOP) past `triggerer_health_check_threshold`; Airflow hands its triggers to
the other. While the failover is under way a user marks `app_9` failed and clears `app_8`.
Then the paused triggerer resumes: Airflow 3.3 cancels every trigger it no longer owns with
the cancel of a user's kill (apache/airflow#73454), so each of its triggers runs `on_kill`.

What must hold: the kills of the eight untouched tasks read their task instances still
deferred and delete nothing; every one ends with its driver's real outcome on try 1. The
user's two actions still take effect: app_9's driver is deleted and the task stays failed;
app_8's old driver is deleted and its second try runs a new one to its outcome.

The SIGKILL variant (a dead triggerer runs no `on_kill`) stays in tests/chaos.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from testenv.airflow_stack import AirflowStack, wait_for
from testenv.harness.kube import create_namespace, request
from tests.e2e.e2e_stack import stack_on_postgres

pytestmark = [pytest.mark.airflow, pytest.mark.controlplane, pytest.mark.timeout(1500)]

DAG_ID = "e2e_failover"
APPLICATIONS = 10
NAMESPACE = "airflow-failover-pause"
MARKED = "app_9"  # marked failed by the user during the failover
CLEARED = "app_8"  # cleared by the user during the failover
UNTOUCHED = [f"app_{index}" for index in range(8)]
TASK_ID_LABEL = "sparkk8s.io/task-id"
DELIVERY_DAG = "e2e_delivery"


def task_instances(client: httpx.Client, run_id: str) -> dict[str, dict[str, Any]]:
    response = client.get(f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")
    response.raise_for_status()
    return {t["task_id"]: t for t in response.json()["task_instances"]}


def task_instances_of(client: httpx.Client, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
    response = client.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
    response.raise_for_status()
    return {t["task_id"]: t for t in response.json()["task_instances"]}


def xcom(client: httpx.Client, dag_id: str, run_id: str, task_id: str, key: str) -> Any:
    path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
    response = client.get(path)
    response.raise_for_status()
    value = response.json()["value"]
    return json.loads(value) if isinstance(value, str) else value


def holders(tis: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """task id -> the triggerer id its trigger row names (deferred tasks only)."""
    return {
        task_id: (ti.get("trigger") or {}).get("triggerer_id")
        for task_id, ti in tis.items()
        if ti["state"] == "deferred"
    }


def drivers(kube_admin: Any) -> dict[str, list[dict[str, Any]]]:
    """task id -> its driver pods (not being deleted), oldest first."""
    pods = request(kube_admin, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    found: dict[str, list[dict[str, Any]]] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"]):
        labels = pod["metadata"].get("labels") or {}
        if labels.get("spark-role") == "driver" and not pod["metadata"].get("deletionTimestamp"):
            found.setdefault(labels.get(TASK_ID_LABEL, "?"), []).append(pod)
    return found


def release(kube_admin: Any, pod: dict[str, Any]) -> None:
    name = pod["metadata"]["name"]
    annotations = {"kwok.sparkk8s.io/hold": "false", "kwok.sparkk8s.io/run-ms": "100"}
    request(
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
        {"metadata": {"annotations": annotations}},
        "application/merge-patch+json",
    )


def kill_lines(stack: AirflowStack) -> list[str]:
    """Every line the trigger kills wrote to the task logs (and the triggerers' own)."""
    lines = []
    for path in [*(stack.home / "logs").rglob("*"), *(stack.home / "components").glob("*.log")]:
        if path.is_file():
            text = path.read_text(errors="replace")
            lines += [line for line in text.splitlines() if "driver pod" in line]
    return lines


def pause_group(process: Any, sig: int) -> None:
    os.killpg(process.pid, sig)


@pytest.fixture(scope="module")
def failover_namespace(control_plane: Any) -> str:
    create_namespace(control_plane, NAMESPACE)
    return NAMESPACE


@pytest.fixture
def stack(
    control_plane: Any,
    failover_namespace: str,
    kube_admin: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[AirflowStack]:
    """An Airflow on PostgreSQL for each test (SQLite cannot carry two triggerers), and for
    each rerun: these tests run again on Airflow's defer race (tests/conftest.py), and a
    rerun must not meet the first attempt's triggerers, trigger rows or driver pods. The
    namespace is emptied of pods first."""
    pods = f"/api/v1/namespaces/{failover_namespace}/pods"
    request(kube_admin, "DELETE", pods)
    wait_for(
        lambda: not request(kube_admin, "GET", pods)["items"] or None,
        timeout=120,
        what=f"no pods left in {failover_namespace}",
    )
    # Heartbeats every second (the stack's default here), so 8 s tells a paused triggerer
    # from a busy one on a loaded machine.
    threshold = {"AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "8"}
    with stack_on_postgres(tmp_path_factory.mktemp("failover"), extra_env=threshold) as airflow:
        airflow.wait_healthy(timeout=300)
        extra = {"kube_config_path": str(control_plane.admin_kubeconfig), "namespace": NAMESPACE}
        airflow.put_connection("spark_k8s_default", "spark_k8s", extra=json.dumps(extra))
        yield airflow


def test_a_paused_triggerer_resumes_and_kills_nothing_healthy(
    stack: AirflowStack, kube_admin: Any
) -> None:
    paused = None
    try:
        with stack.client() as client:
            stack.wait_dag(client, DAG_ID, timeout=180)
            run_id = stack.trigger(client, DAG_ID)

            def all_on_one() -> list[Any] | None:
                stack.check_alive()
                held = holders(task_instances(client, run_id))
                ids = list(set(held.values()))
                if len(held) == APPLICATIONS and len(ids) == 1 and None not in ids:
                    return ids  # a list: wait_for takes any truthy answer
                return None

            (first,) = wait_for(all_on_one, timeout=600, what="ten tasks deferred on one triggerer")
            before = drivers(kube_admin)
            assert sorted(before) == sorted([*UNTOUCHED, CLEARED, MARKED])
            stack.start_component("triggerer-2", kind="triggerer")
            wait_for(
                lambda: "Starting the triggerer" in stack.tail("triggerer-2", 200) or None,
                timeout=180,
                what="the second triggerer to start",
            )
            paused = stack.processes["triggerer"]
            pause_group(paused, signal.SIGSTOP)

            def all_moved() -> bool | None:
                held = holders(task_instances(client, run_id))
                moved = len(held) == APPLICATIONS and all(
                    h not in (None, first) for h in held.values()
                )
                return moved or None

            wait_for(all_moved, timeout=180, what="the ten triggers to move")
            # The user acts while the first triggerer is still paused.
            marked = client.patch(
                f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{MARKED}",
                json={"new_state": "failed"},
            )
            assert marked.status_code == 200, marked.text
            cleared = client.post(
                f"/dags/{DAG_ID}/clearTaskInstances",
                json={
                    "dag_run_id": run_id,
                    "task_ids": [CLEARED],
                    "dry_run": False,
                    "only_failed": False,
                },
            )
            assert cleared.status_code == 200, cleared.text
            pause_group(paused, signal.SIGCONT)
            paused = None

            # The resumed triggerer runs on_kill for the ten triggers it held: wait for
            # each kill's verdict, then check the drivers before anything is released.
            def spared() -> list[str] | None:
                stack.check_alive()
                lines = [line for line in kill_lines(stack) if "still deferred" in line]
                return lines if len(lines) >= len(UNTOUCHED) else None

            wait_for(spared, timeout=180, what="the resumed triggerer's eight spared kills")

            def users_kills_done() -> dict[str, list[dict[str, Any]]] | None:
                now = drivers(kube_admin)
                old_cleared = before[CLEARED][0]["metadata"]["uid"]
                gone = MARKED not in now and all(
                    p["metadata"]["uid"] != old_cleared for p in now.get(CLEARED, [])
                )
                return now if gone else None

            during = wait_for(users_kills_done, timeout=180, what="the user's two kills")
            for task in UNTOUCHED:
                (pod,) = during[task]
                assert pod["metadata"]["uid"] == before[task][0]["metadata"]["uid"], task
                assert pod["status"]["phase"] == "Running", (task, pod["status"]["phase"])

            # The cleared task's second try submits a new driver; release every driver.
            def second_driver() -> list[dict[str, Any]] | None:
                return drivers(kube_admin).get(CLEARED) or None

            wait_for(second_driver, timeout=300, what="app_8's second try to submit")
            for pods in drivers(kube_admin).values():
                for pod in pods:
                    release(kube_admin, pod)
            run = stack.wait_run(client, DAG_ID, run_id, timeout=600)
            after = task_instances(client, run_id)
    finally:
        if paused is not None:
            pause_group(paused, signal.SIGCONT)
    print(f"run {run['state']}; kill verdicts: {len(kill_lines(stack))} lines")
    for index in range(8):
        ti = after[f"app_{index}"]
        expected = "failed" if index % 3 == 0 else "success"
        assert (ti["state"], ti["try_number"]) == (expected, 1), (ti["task_id"], ti["state"])
    assert (after[MARKED]["state"], after[MARKED]["try_number"]) == ("failed", 1)
    cleared_try = (after[CLEARED]["state"], after[CLEARED]["try_number"])
    # Shown with a failure (pytest cuts an assertion's message short; stdout it shows whole):
    # what each try of the cleared task logged, and every kill verdict.
    for attempt in (1, 2):
        print(f"--- {CLEARED} try {attempt}:\n" + task_log(stack, run_id, CLEARED, attempt, DAG_ID))
    print("--- kill verdicts:\n" + "\n".join(kill_lines(stack)))
    assert cleared_try == ("success", 2), cleared_try


def task_log(
    stack: AirflowStack, run_id: str, task_id: str, attempt: int, dag_id: str = DELIVERY_DAG
) -> str:
    folder = stack.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
    path = folder / f"task_id={task_id}" / f"attempt={attempt}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def submitted(text: str) -> list[str]:
    return re.findall(r"Submitted Spark application (spark-[0-9a-f]+)", text)


def test_a_lost_result_is_delivered_by_the_next_try_and_a_clear_runs_again(
    stack: AirflowStack, kube_admin: Any
) -> None:
    """Try 1 raises after its application succeeded (tests/e2e/e2e_dags/e2e_delivery.py);
    try 2 delivers the kept result: the application ran once, the task succeeds on try 2
    with try 1's XCom. A clear then runs the application again."""
    with stack.client() as client:
        stack.wait_dag(client, DELIVERY_DAG, timeout=180)
        run_id = stack.trigger(client, DELIVERY_DAG)
        run = stack.wait_run(client, DELIVERY_DAG, run_id, timeout=600)
        ti = task_instances_of(client, DELIVERY_DAG, run_id)["deliver"]
        returned = xcom(client, DELIVERY_DAG, run_id, "deliver", "return_value")
        first, second = (task_log(stack, run_id, "deliver", n) for n in (1, 2))
        assert (run["state"], ti["state"], ti["try_number"]) == ("success", "success", 2)
        (application,) = submitted(first)
        assert "result is lost" in first
        assert submitted(second) == [], second[-3000:]
        assert "delivering its result instead of running the application again" in second
        assert returned["application_id"] == application and returned["status"] == "success"
        assert "Result delivered: deleted its record" in second
        cleared = client.post(
            f"/dags/{DELIVERY_DAG}/clearTaskInstances",
            json={
                "dag_run_id": run_id,
                "task_ids": ["deliver"],
                "dry_run": False,
                "only_failed": False,
            },
        )
        assert cleared.status_code == 200, cleared.text

        def ended_again() -> dict[str, Any] | None:
            now = task_instances_of(client, DELIVERY_DAG, run_id)["deliver"]
            return now if now["try_number"] >= 3 and now["state"] in ("success", "failed") else None

        again = wait_for(ended_again, timeout=600, what="the cleared task to end")
    third = task_log(stack, run_id, "deliver", 3)
    (rerun,) = submitted(third)
    assert rerun != application
    assert again["state"] == "success"  # try 3 of a new clear: the subclass raises on try 1 only
