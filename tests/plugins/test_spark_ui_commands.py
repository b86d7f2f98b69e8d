"""The Spark UI link never runs a connection's command in Airflow's api-server (issue 44): a
real api-server, a Viewer of the DAG, and a task whose `spark_k8s` connection names a
kubeconfig whose user runs an `exec:` credential plugin (a script that writes a marker file).
The page refuses with 403, naming the connection and the setting, and the marker never
appears; with `[sparkk8s] allow_credential_commands_in_api_server = True` the deployment has
opted in, and the command runs at the proxied request (the marker appears)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.plugins.airflow_api import ApiServer, api_server

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

CONN_ID = "spark_k8s_exec"
PAGE = "/sparkk8s/ui/etl/manual__1/pi/-1/jobs/"
# A DAG, its run and the task's `spark_ui` XCom naming the connection, as the operator
# publishes it (no scheduler: the rows are written through Airflow's models).
ROWS = """
import datetime
from airflow.models.dag import DagModel
from airflow.models.dagbundle import DagBundleModel
from airflow.models.dagrun import DagRun
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from airflow.utils.types import DagRunType

with create_session() as session:
    if session.get(DagBundleModel, "dags-folder") is None:
        session.add(DagBundleModel(name="dags-folder"))
        session.flush()
    session.add(DagModel(dag_id="etl", bundle_name="dags-folder", fileloc="/etl.py"))
    session.flush()
    session.add(DagRun(
        dag_id="etl", run_id="manual__1", run_type=DagRunType.MANUAL,
        run_after=datetime.datetime(2026, 12, 6, tzinfo=datetime.timezone.utc),
    ))
XComModel.set(
    "spark_ui",
    {"conn_id": "CONN_ID", "namespace": "jobs", "driver_pod": "pi-driver", "port": 4040},
    dag_id="etl", task_id="pi", run_id="manual__1",
)
""".replace("CONN_ID", CONN_ID)


def exec_kubeconfig(folder: Path, marker: Path) -> Path:
    """A kubeconfig whose server refuses connections and whose user runs a script first."""
    script = folder / "credential.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho '{{}}'\nexit 1\n")
    script.chmod(0o755)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [
            {
                "name": "u",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": str(script),
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = folder / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(params=[False, True], ids=["default", "opted-in"])
def server(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[ApiServer, Path, bool]]:
    marker = tmp_path / "the-command-ran"
    kubeconfig = exec_kubeconfig(tmp_path, marker)
    connection = {"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}
    env = {f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(connection)}
    if request.param:
        env["AIRFLOW__SPARKK8S__ALLOW_CREDENTIAL_COMMANDS_IN_API_SERVER"] = "True"
    with api_server(tmp_path / "home", {"viewer": "viewer"}, env, rows=ROWS) as running:
        yield running, marker, request.param


def test_a_viewer_never_makes_the_api_server_run_a_connections_command(server):
    running, marker, opted_in = server
    token = running.token("viewer")
    response = httpx.get(
        f"{running.base_url}{PAGE}", headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    if not opted_in:
        assert response.status_code == 403, response.text
        detail = response.json()["detail"]
        assert CONN_ID in detail and "allow_credential_commands_in_api_server" in detail
        assert "exec credential plugin" in detail
        assert not marker.exists()
    else:
        assert marker.exists(), response.text  # the deployment allowed it: it ran
        assert response.status_code != 403, response.text
