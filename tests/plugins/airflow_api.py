"""A real Airflow api-server alone, with the Spark UI plugin, for the plugin's tests: its own
AIRFLOW_HOME and migrated SQLite DB, SimpleAuthManager users given by the test, and rows
written straight into the DB through Airflow's models (no scheduler, no DAG processor)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx

from testenv.airflow_db import migrate
from testenv.airflow_stack import (
    AIRFLOW_BIN,
    airflow_environment,
    free_port,
    plugin_installed,
    wait_for,
)


@dataclass
class ApiServer:
    base_url: str
    env: dict[str, str]
    passwords: dict[str, str]

    def token(self, user: str) -> str:
        response = httpx.post(
            f"{self.base_url}/auth/token",
            json={"username": user, "password": self.passwords[user]},
            timeout=60,
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    def run_python(self, code: str) -> str:
        """Run `code` with the server's configuration (its DB), in a fresh interpreter."""
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout


@contextmanager
def api_server(
    home: Path, users: Mapping[str, str], extra_env: Mapping[str, str] = {}, rows: str = ""
) -> Iterator[ApiServer]:
    """`users`: {name: "role" or "role:team1|team2"}; passwords are generated. `rows`:
    Python run on the migrated DB before the server starts (its teams must exist first)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dags").mkdir(exist_ok=True)
    plugins = home / "plugins"
    plugins.mkdir(exist_ok=True)
    if not plugin_installed():
        (plugins / "sparkk8s_spark_ui.py").write_text(
            "from airflow_provider_sparkk8s.plugins.spark_ui import SparkK8sUiPlugin  # noqa\n"
        )
    passwords = {name: f"pw-{name}-{os.urandom(4).hex()}" for name in users}
    (home / "passwords.json").write_text(json.dumps(passwords))
    port = free_port()
    env = airflow_environment(
        home,
        home / "dags",
        port,
        {
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
                f"{name}:{spec}" for name, spec in users.items()
            ),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(plugins),
            **extra_env,
        },
    )
    migrate(AIRFLOW_BIN, env)  # a copy of a migrated SQLite (testenv/airflow_db.py)
    server = ApiServer(f"http://127.0.0.1:{port}", env, passwords)
    if rows:
        server.run_python(rows)
    log = (home / "api-server.log").open("ab")
    process = subprocess.Popen(
        [
            str(AIRFLOW_BIN),
            "api-server",
            "--workers",
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def up() -> bool | None:
            if process.poll() is not None:
                raise RuntimeError((home / "api-server.log").read_text()[-3000:])
            return (
                True
                if httpx.get(f"{server.base_url}/api/v2/monitor/health", timeout=5).is_success
                else None
            )

        wait_for(up, timeout=240, what="the api-server to answer")
        yield server
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


# A DAG of one SparkK8sSubmitOperator task, serialized as the DAG processor would, its run
# created by the serialized DAG (the task instance with its DAG version), and the task's
# `spark_ui` XCom: what the plugin reads in the api-server (no scheduler, no worker).
SPARK_TASK_DAG = """
import datetime
from airflow.sdk import DAG
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

with DAG("etl", start_date=datetime.datetime(2026, 1, 1), schedule=None):
    SparkK8sSubmitOperator(
        task_id="pi", application="local:///opt/spark/pi.py", kubernetes_conn_id=CONN_ID,
        namespace=NAMESPACE,
    )
"""
SPARK_TASK_ROWS = """
import datetime
from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
from airflow.models.dagbag import DBDagBag
from airflow.models.dagbundle import DagBundleModel
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState
from airflow.utils.types import DagRunTriggeredByType, DagRunType

with create_session() as session:
    if session.get(DagBundleModel, "dags-folder") is None:
        session.add(DagBundleModel(name="dags-folder"))
bag = DagBag(dag_folder=DAG_FILE, bundle_name="dags-folder")
assert not bag.import_errors, bag.import_errors
sync_bag_to_db(bag, "dags-folder", None)
with create_session() as session:
    dag = DBDagBag().get_latest_version_of_dag("etl", session=session)
    dag.create_dagrun(
        run_id="manual__1", run_type=DagRunType.MANUAL, state=DagRunState.RUNNING,
        run_after=datetime.datetime(2026, 12, 6, tzinfo=datetime.timezone.utc),
        triggered_by=DagRunTriggeredByType.TEST, session=session,
    )
XComModel.set("spark_ui", XCOM, dag_id="etl", task_id="pi", run_id="manual__1")
"""


def spark_task_rows(home: Path, conn_id: str, namespace: str, xcom: Mapping[str, object]) -> str:
    """Writes the DAG file under `home`'s dags folder; the rows' code for `api_server`."""
    dags = home / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    dag_file = dags / "etl.py"
    dag = SPARK_TASK_DAG.replace("CONN_ID", repr(conn_id)).replace("NAMESPACE", repr(namespace))
    dag_file.write_text(dag)
    return SPARK_TASK_ROWS.replace("DAG_FILE", repr(str(dag_file))).replace(
        "XCOM", repr(dict(xcom))
    )
