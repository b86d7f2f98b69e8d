"""The Spark UI link never runs a connection's command in Airflow's api-server (issue 44): a
real api-server, a Viewer of the DAG, and a task whose `spark_k8s` connection names a
kubeconfig whose user runs an `exec:` credential plugin (a script that writes a marker file).
The page refuses with 403, naming the connection and the setting, and the marker never
appears; with `[sparkk8s] allow_credential_commands_in_api_server = True` the deployment has
opted in, and the command runs at the first request to the API server, the driver pod's GET
(the marker appears)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.plugins.airflow_api import ApiServer, api_server, spark_task_rows

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

CONN_ID = "spark_k8s_exec"
PAGE = "/sparkk8s/ui/etl/manual__1/pi/-1/jobs/"
# The task's `spark_ui` XCom, as the operator publishes it; the connection the plugin uses is
# the one of the task's serialized definition (tests/plugins/airflow_api.py writes both).
XCOM = {"conn_id": CONN_ID, "namespace": "jobs", "driver_pod": "pi-driver", "port": 4040}


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
    rows = spark_task_rows(tmp_path / "home", CONN_ID, "jobs", XCOM)
    with api_server(tmp_path / "home", {"viewer": "viewer"}, env, rows=rows) as running:
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
