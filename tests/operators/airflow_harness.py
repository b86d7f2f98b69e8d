"""A real Airflow 3 in a subprocess: its own AIRFLOW_HOME, a SQLite metadata DB migrated once
per session and copied per run, DAG files written by the test, and `dag.test()` (which runs
a deferred task's trigger in-process, the way `airflow dags test` does). `tasks_test` runs
Airflow's own `airflow tasks test` command on one task instance of that run (it resumes a
deferred task instance with the deferral's kwargs, as a worker would).

The run's whole output is the task log; `run_dag.py` dumps the DB afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testenv.airflow_db import migrate
from testenv.harness.waiting import wait_for

RUNNER = Path(__file__).with_name("run_dag.py")
REPO = Path(__file__).resolve().parents[2]
AIRFLOW = str(Path(sys.executable).with_name("airflow"))
LOGICAL_DATE = "2026-11-29T12:00:00+00:00"
# Terminal colour and style codes. Airflow 3.0 writes a failed task's exception only inside a
# rich traceback, coloured even into a file (3.3 also logs it plainly); the tests read text.
ANSI_CODES = re.compile(r"\x1b\[[0-9;]*m")
# Airflow 3.0's `dags test` prints its debug-level echo of every request from the task to its
# in-process supervisor, whatever the logging level says (3.3's keeps to the level).
# Two kinds carry secrets by design: a request to mask one, and the rendered fields before
# the API server redacts them (the stored copy is checked with the rest of the DB).
REQUEST_ECHO = re.compile(
    r"^.*\[debug +\] (Sending request|Received message from task runner \[supervisor\])"
    r" +msg=(MaskSecret|SetRenderedFields)\(.*$",
    re.MULTILINE,
)

DAG_HEADER = """
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
"""


def base_env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "PYTEST_"))
    }
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "PYTHONPATH": str(REPO),
        }
    )
    return env


def migrate_template(home: Path) -> Path:
    """A migrated Airflow home that runs copy: its database a copy of the one migrated once
    per Airflow install (testenv/airflow_db.py)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dags").mkdir(exist_ok=True)
    migrate(Path(AIRFLOW), base_env(home), timeout=600)
    return home


def operator_source(
    task_id: str, kwargs: dict[str, Any], cls: str = "SparkK8sSubmitOperator"
) -> str:
    return f"    {cls}(task_id={task_id!r}, **{kwargs!r})\n"


def dag_source(dag_id: str, tasks: str, preamble: str = "", retries: int = 0) -> str:
    return (
        DAG_HEADER
        + preamble
        + f"\nwith DAG(dag_id={dag_id!r}, schedule=None, start_date=datetime(2026, 1, 1), "
        f"catchup=False, default_args={{'retries': {retries}, 'retry_delay': timedelta(0)}}) as dag:\n"
        + tasks
    )


@dataclass
class RunResult:
    returncode: int | None
    output: str
    db: dict[str, Any] = field(default_factory=dict)

    def state(self, task_id: str, map_index: int = -1) -> str | None:
        for ti in self.db.get("task_instances", []):
            if ti["task_id"] == task_id and ti["map_index"] == map_index:
                return ti["state"]
        return None

    def xcom(self, task_id: str, key: str = "return_value", map_index: int = -1) -> Any:
        for row in self.db.get("xcoms", []):
            if (row["task_id"], row["key"], row["map_index"]) == (task_id, key, map_index):
                return row["value"]
        return None

    def everything(self) -> str:
        """Every byte the run produced: output, XComs, rendered fields, trigger kwargs; less
        Airflow 3.0's echo of the requests that carry secrets by design (REQUEST_ECHO)."""
        output = REQUEST_ECHO.sub("", self.output)
        return output + "\n" + json.dumps(self.db, default=str)


class AirflowRun:
    """One Airflow process running one DAG (or one `airflow` command); kill it or wait for it.

    With `command`, the process is that command and the DB is dumped once it has ended.
    """

    def __init__(
        self, home: Path, dag_id: str, env: dict[str, str], command: list[str] | None = None
    ):
        self.home = home
        self.dag_id = dag_id
        self.env = env
        name = dag_id if command is None else f"{dag_id}-{'-'.join(command[1:3])}"
        self.log_path = home / f"{name}.log"
        self.result_path = home / f"{name}.json"
        self.dump_after = command is not None
        self._sink = self.log_path.open("w")
        argv = command or [sys.executable, str(RUNNER), str(home / "dags" / f"{dag_id}.py"),
                           dag_id, LOGICAL_DATE, str(self.result_path)]  # fmt: skip
        self.process = subprocess.Popen(
            argv, env=env, stdout=self._sink, stderr=subprocess.STDOUT, cwd=str(home)
        )

    def output(self) -> str:
        return ANSI_CODES.sub("", self.log_path.read_text(errors="replace"))

    def wait_for_output(self, text: str, timeout: float) -> None:
        wait_for(
            lambda: text in self.output() or self.process.poll() is not None, timeout, repr(text)
        )
        assert text in self.output(), (
            f"process ended without printing {text!r}:\n{self.output()[-4000:]}"
        )

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._sink.close()

    def finish(self, timeout: float) -> RunResult:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.dag_id} still running after {timeout}s:\n{self.output()[-6000:]}"
            ) from None
        self._sink.close()
        if self.dump_after:
            subprocess.run(
                [sys.executable, str(RUNNER), "--dump", self.dag_id, str(self.result_path)],
                env=self.env, cwd=str(self.home), timeout=300, check=True,
            )  # fmt: skip
        db = json.loads(self.result_path.read_text()) if self.result_path.exists() else {}
        return RunResult(code, self.output(), db)


class AirflowHome:
    """A fresh AIRFLOW_HOME from the migrated template, with DAG files and a connection."""

    def __init__(
        self,
        root: Path,
        template: Path,
        connection: dict[str, Any],
        env: dict[str, str] | None = None,
    ):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(template / "airflow.db", root / "airflow.db")
        (root / "dags").mkdir(exist_ok=True)
        self.env = base_env(root)
        self.env["AIRFLOW_CONN_SPARK_K8S_DEFAULT"] = json.dumps(connection)
        self.env.update(env or {})

    def write_dag(self, dag_id: str, source: str) -> None:
        (self.root / "dags" / f"{dag_id}.py").write_text(source)

    def start(self, dag_id: str, extra_env: dict[str, str] | None = None) -> AirflowRun:
        return AirflowRun(self.root, dag_id, {**self.env, **(extra_env or {})})

    def run(
        self, dag_id: str, timeout: float = 600, extra_env: dict[str, str] | None = None
    ) -> RunResult:
        return self.start(dag_id, extra_env).finish(timeout)

    def start_tasks_test(self, dag_id: str, task_id: str) -> AirflowRun:
        """`airflow tasks test <dag> <task> <run id>` on the task instance of the run that
        `start(dag_id)` made (same run id): the same task instance, run again."""
        command = [AIRFLOW, "tasks", "test", dag_id, task_id, f"manual__{LOGICAL_DATE}"]
        return AirflowRun(self.root, dag_id, self.env, command)
