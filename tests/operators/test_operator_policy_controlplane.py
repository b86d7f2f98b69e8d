"""The platform policy in a real Airflow run (`dag.test()` in a subprocess) against the real
API server behind the recording endpoint: a task that breaks the connection's policy fails
on its first try although it has retries, and no request of it reached the API server; a
dry run names the policy; an allowed task runs (KWOK) with the platform's labels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as k8s_config

from airflow_provider_sparkk8s.application.task.task_identity import (
    TaskInstanceRef,
    driver_pod_name,
)
from airflow_provider_sparkk8s.version_compat import AIRFLOW_V_3_1_PLUS
from testenv.controlplane import ControlPlane
from testenv.harness.kube import request
from testenv.harness.recorder import RecordingServer
from tests.operators.airflow_harness import (
    AirflowHome,
    RunResult,
    dag_source,
    migrate_template,
    operator_source,
)
from tests.operators.test_operator_controlplane import ANNOTATION, RUN_ID
from tests.operators.test_operator_controlplane import COMMON as SCENARIO_COMMON
from tests.parity.apiserver import ApiServerUpstream

pytestmark = [pytest.mark.controlplane, pytest.mark.airflow, pytest.mark.timeout(900)]

DAG_ID = "spark_policy"
SECRET = "planted-policy-token-5d0c2e"
KWOK_RUN_MS = ANNOTATION + "run-ms"
COMMON = {**SCENARIO_COMMON, "deferrable": False}
TASKS: dict[str, dict[str, Any]] = {
    "over_ceiling": {**COMMON, "num_executors": 9, "retries": 3},
    "denied_token": {
        **COMMON,
        "retries": 3,
        "conf": {"spark.kubernetes.authenticate.submission.oauthToken": SECRET},
    },
    "dry_run_kept": {**COMMON, "dry_run": True},
    "allowed": {**COMMON, "num_executors": 2, "on_finish_action": "keep_pod",
                "conf": {KWOK_RUN_MS: "500"}},
}  # fmt: skip
BREACHING = ("over_ceiling", "denied_token")


def policy(namespace: str) -> dict[str, Any]:
    return {
        "denied_keys": ["spark.kubernetes.authenticate.*"],
        "allowed_namespaces": [namespace],
        "max_executors": 4,
        "required_labels": ["cost-center"],
        "labels": {"cost-center": "data-eng"},
    }


@pytest.fixture
def upstream(control_plane: ControlPlane, namespace: str) -> Iterator[ApiServerUpstream]:
    upstream = ApiServerUpstream(
        control_plane.server,
        str(control_plane.ca_file),
        str(control_plane.admin_cert_file),
        str(control_plane.admin_key_file),
        namespace,
    )
    yield upstream
    upstream.close_connection()


@pytest.fixture
def run(
    tmp_path: Path, upstream: ApiServerUpstream, namespace: str
) -> Iterator[tuple[RunResult, RecordingServer]]:
    template = migrate_template(tmp_path / "template")
    with RecordingServer(upstream=upstream) as server:
        connection = {
            "conn_type": "spark_k8s",
            "host": server.url,  # every request of the run goes through the recorder
            "extra": {"namespace": namespace, "policy": json.dumps(policy(namespace))},
        }
        home = AirflowHome(tmp_path / "airflow", template, connection)
        tasks = "".join(operator_source(task_id, kwargs) for task_id, kwargs in TASKS.items())
        home.write_dag(DAG_ID, dag_source(DAG_ID, tasks))
        yield home.run(DAG_ID, timeout=800), server


def test_a_breach_fails_at_once_and_sends_nothing(
    run: tuple[RunResult, RecordingServer], control_plane: ControlPlane, namespace: str
) -> None:
    result, server = run
    assert result.db, result.output[-6000:]
    states = {ti["task_id"]: ti["state"] for ti in result.db["task_instances"]}
    assert states == {
        "over_ceiling": "failed",
        "denied_token": "failed",
        "dry_run_kept": "success",
        "allowed": "success",
    }, result.output[-8000:]
    tries = {ti["task_id"]: ti["try_number"] for ti in result.db["task_instances"]}
    assert tries["over_ceiling"] == tries["denied_token"] == 1  # retries=3, none used
    source = "the platform policy from connection 'spark_k8s_default' (extra policy)"
    # Airflow 3.0 prints the exception in a boxed, wrapped traceback: read it unwrapped.
    text = re.sub(r"[\s│]*\n[\s│]*", " ", result.output)
    assert f"{source} refuses this submission: spark.executor.instances='9' breaks " in text
    assert (
        "spark.kubernetes.authenticate.submission.oauthToken='*********(redacted)' breaks "
        "denied_keys 'spark.kubernetes.authenticate.*'" in text
    )
    leaks = [line for line in result.everything().splitlines() if SECRET in line]
    if AIRFLOW_V_3_1_PLUS:
        assert leaks == []
    else:
        # Airflow 3.0's console (dag.test, tasks test) prints a rich traceback with every
        # frame's locals, the conf among them; its stored JSON task log has no locals.
        assert all("│" in line for line in leaks), leaks
    assert "Policy from connection 'spark_k8s_default' (extra policy): every rule kept" in (
        result.output
    )

    # The API server received requests of the allowed task only.
    recorded = json.dumps(server.recording.as_list())
    assert recorded.count('"method": "POST"') >= 1
    for task_id in BREACHING:
        ref = TaskInstanceRef(DAG_ID, task_id, RUN_ID)
        assert ref.digest not in recorded and driver_pod_name(task_id, ref, 1) not in recorded
    ref = TaskInstanceRef(DAG_ID, "allowed", RUN_ID)
    assert driver_pod_name("allowed", ref, 1) in recorded

    api = k8s_config.new_client_from_config(config_file=str(control_plane.admin_kubeconfig))
    pods = request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    api.close()
    assert [p["metadata"]["name"] for p in pods] == [driver_pod_name("allowed", ref, 1)]
    assert pods[0]["metadata"]["labels"]["cost-center"] == "data-eng"
    assert pods[0]["metadata"]["labels"]["sparkk8s.io/task-instance"] == ref.digest
