"""Two real Airflow triggerers share ten deferred Spark applications, on PostgreSQL as in
production; one is SIGKILLed while the drivers are held. Airflow hands its triggers to the
survivor once the dead one's heartbeat is stale, and every task ends with its driver's
real outcome, on its first try: no completion lost, none reported twice."""

from __future__ import annotations

import json
import os
import signal
import time

import httpx
import pytest

from testenv.airflow_stack import wait_for
from testenv.harness.kube import create_namespace, request
from tests.e2e.e2e_stack import stack_on_postgres

pytestmark = [pytest.mark.airflow, pytest.mark.controlplane, pytest.mark.timeout(1200)]

DAG_ID = "e2e_failover"
APPLICATIONS = 10
NAMESPACE = "airflow-failover"


def task_instances(client: httpx.Client, run_id: str) -> list[dict]:
    response = client.get(f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")
    response.raise_for_status()
    return list(response.json()["task_instances"])


def release_drivers(kube_admin) -> int:  # type: ignore[no-untyped-def]
    pods = request(kube_admin, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    drivers = [p for p in pods if p["metadata"]["labels"].get("spark-role") == "driver"]
    for pod in drivers:
        request(
            kube_admin,
            "PATCH",
            f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}",
            {
                "metadata": {
                    "annotations": {
                        "kwok.sparkk8s.io/hold": "false",
                        "kwok.sparkk8s.io/run-ms": "100",
                    }
                }
            },
            "application/merge-patch+json",
        )
    return len(drivers)


def test_a_killed_triggerer_hands_its_triggers_to_the_survivor(control_plane, kube_admin, tmp_path):
    settings = {
        # Each triggerer takes half, so killing one strands five applications.
        "AIRFLOW__TRIGGERER__CAPACITY": str(APPLICATIONS // 2),
        "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "5",
    }
    with stack_on_postgres(tmp_path, extra_env=settings) as stack:
        stack.start_component("triggerer-2", kind="triggerer")
        create_namespace(control_plane, NAMESPACE)
        stack.wait_healthy(timeout=300)
        extra = {
            "kube_config_path": str(control_plane.admin_kubeconfig),
            "namespace": NAMESPACE,
        }
        stack.put_connection("spark_k8s_default", "spark_k8s", extra=json.dumps(extra))
        with stack.client() as client:
            stack.wait_dag(client, DAG_ID, timeout=180)
            run_id = stack.trigger(client, DAG_ID)

            def all_deferred() -> list[dict] | None:
                stack.check_alive()
                tis = task_instances(client, run_id)
                deferred = [t for t in tis if t["state"] == "deferred"]
                holders = {(t.get("trigger") or {}).get("triggerer_id") for t in deferred}
                if len(deferred) == APPLICATIONS and None not in holders and len(holders) == 2:
                    return tis
                return None

            before = wait_for(
                all_deferred, timeout=600, what="ten tasks deferred on two triggerers"
            )
            victim = stack.processes.pop("triggerer")
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
            killed_at = time.monotonic()
            assert release_drivers(kube_admin) == APPLICATIONS
            run = stack.wait_run(client, DAG_ID, run_id, timeout=600)
            took = time.monotonic() - killed_at
            after = {t["task_id"]: t for t in task_instances(client, run_id)}
    print(f"triggerer killed; the run ended {took:.1f}s later ({run['state']})")
    holders = {t["task_id"]: t["trigger"]["triggerer_id"] for t in before}
    assert len(set(holders.values())) == 2
    for index in range(APPLICATIONS):
        ti = after[f"app_{index}"]
        expected = "failed" if index % 3 == 0 else "success"
        assert (ti["state"], ti["try_number"]) == (expected, 1), (ti["task_id"], ti["state"])
    assert run["state"] == "failed"  # four applications fail on purpose
