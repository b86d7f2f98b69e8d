"""Real Airflow 3 components as subprocesses, for end-to-end and browser tests.

One temp AIRFLOW_HOME, a SQLite metadata DB (Airflow 3 accepts SQLite with the
LocalExecutor, as `airflow standalone` does), and the four long-running components:
api-server, scheduler, dag-processor and triggerer. Everything binds 127.0.0.1;
log servers are skipped because they would bind every interface, and the api-server
reads the task logs straight from the shared local log folder instead.

The e2e suite's own names and its stack on PostgreSQL are in tests/e2e/e2e_stack.py;
benchmarks/bench_real_triggerer.py launches a stack of its own.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

import httpx

from testenv.airflow_db import migrate
from testenv.ports import free_port

AIRFLOW_BIN = Path(sys.executable).with_name("airflow")
REPO = Path(__file__).resolve().parents[1]
ADMIN_USER = "admin"
COMPONENTS: dict[str, list[str]] = {
    "api-server": ["api-server", "--workers", "1", "--host", "127.0.0.1"],
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
}
# /api/v2/monitor/health reports these by heartbeat; the api-server answering is the fourth.
HEARTBEAT_COMPONENTS = ("scheduler", "dag_processor", "triggerer")

T = TypeVar("T")


class StackError(RuntimeError):
    """A component did not come up, or a wait ran past its deadline."""


# Airflow 3.3's scheduler fails a resumed deferred task when it drains the executor's success
# event of the process that deferred only after the resumed attempt is running (open upstream:
# apache/airflow#72716, #71580). Seen here at loads of 13-20 on the first deferral of a session.
DEFER_RACE_LINE = "finished with state success, but the task instance's state attribute is running"


class AirflowDeferRace(StackError):
    """A run failed by Airflow's stale defer-exit race, not by what the test ran: the e2e
    tests are rerun (at most twice) on this error alone (tests/conftest.py)."""


def wait_for(
    probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.5
) -> T:
    """Poll `probe` until it returns something other than None, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = probe()
        except (httpx.HTTPError, OSError) as exc:  # not up yet
            last_error, result = exc, None
        if result is not None:
            return result
        time.sleep(interval)
    raise StackError(
        f"timed out after {timeout:.0f}s waiting for {what} (last error: {last_error})"
    )


def airflow_environment(
    home: Path, dags_folder: Path, port: int, extra: Mapping[str, str] = {}
) -> dict[str, str]:
    """The environment every component shares: same DB, JWT secret, Fernet key and URLs."""
    from cryptography.fernet import Fernet

    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    base_url = f"http://127.0.0.1:{port}"
    env.update(
        {
            # The working tree's provider, whatever the venv's editable install points at.
            "PYTHONPATH": str(REPO),
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": base_url,
            "AIRFLOW__API__EXPOSE_CONFIG": "False",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            # The UI's connection "Test" button is off by default since Airflow 2.7.
            "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
            # A new DAG file is found within 5 s. A known one is parsed again only after 10
            # minutes: no test changes a DAG file, and parsing every file every 5 s kept the
            # idle stack at 55.6 % of a core (4.8 % with this; 90 s each, 2026-12-06), CPU the
            # real Spark applications of both lanes wait for.
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "300",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
            # A task's calls to the api-server must outlast a busy CI machine's stalls: a
            # timed-out "start" is retried, and the retry is refused as already started.
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
        }
    )
    env.update(extra)
    return env


def written_despite_locks(write: Callable[[], httpx.Response], attempts: int = 5) -> httpx.Response:
    """`write`'s answer, asked again while the API server answers 500 "Database error".
    SQLite is shared by the scheduler, the dag processor and the API server here: a write can
    meet a lock held past SQLite's busy timeout, which the API server answers so (seen in CI
    for a DAG run's trigger, and on 2026-12-07 for the stack's first connection, which left
    every e2e test without its stack). Its transaction was rolled back: asking again is safe."""
    for attempt in range(attempts):
        response = write()
        if not (response.status_code == 500 and "Database error" in response.text):
            break
        time.sleep(1 + attempt)
    return response


@dataclass
class AirflowStack:
    """The running components and a REST client logged in as the admin user."""

    home: Path
    dags_folder: Path
    port: int
    env: dict[str, str]
    password: str
    started_at: float = 0.0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # Words put before a component's command, by component (e.g. nsenter into a namespace).
    prefixes: Mapping[str, list[str]] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_file(self, component: str) -> Path:
        return self.home / "components" / f"{component}.log"

    def tail(self, component: str, lines: int = 40) -> str:
        path = self.log_file(component)
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def run_cli(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [str(AIRFLOW_BIN), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise StackError(f"airflow {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start_component(self, name: str, kind: str | None = None) -> None:
        """Start component `kind` (default: `name`) under `name`, e.g. a second triggerer."""
        self.log_file(name).parent.mkdir(parents=True, exist_ok=True)
        port_flag = ["--port", str(self.port)] if name == "api-server" else []
        command = [*self.prefixes.get(name, []), str(AIRFLOW_BIN), *COMPONENTS[kind or name]]
        with self.log_file(name).open("ab") as log:
            # A new session makes the component's pid its process-group id, so stop()
            # reaches the workers it forks (LocalExecutor, uvicorn) through that pid alone.
            self.processes[name] = subprocess.Popen(
                [*command, *port_flag],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise StackError(f"{name} exited with {process.returncode}:\n{self.tail(name)}")

    def put_connection(self, conn_id: str, conn_type: str, **fields: Any) -> None:
        """Create or replace a connection through the REST API (stored in the DB)."""
        body = {"connection_id": conn_id, "conn_type": conn_type, **fields}
        with self.client() as client:

            def replace() -> httpx.Response:
                client.delete(f"/connections/{conn_id}")
                return client.post("/connections", json=body)

            response = written_despite_locks(replace)
        if response.status_code != 201:
            raise StackError(f"creating {conn_id}: {response.status_code} {response.text}")

    def stop(self, timeout: float = 30) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, process in self.processes.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                # Said (pytest's warnings summary shows it), since a test's teardown then
                # waits the whole timeout for it.
                warnings.warn(
                    f"airflow stack: {name} outlived SIGTERM by {timeout:.0f} s, killed; "
                    f"its log ends:\n{self.tail(name, 15)}",
                    stacklevel=2,
                )
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            # Workers may outlive their parent; the group id is still the parent's pid.
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    # --- REST API ---------------------------------------------------------------------

    def token(self) -> str:
        response = httpx.post(
            f"{self.base_url}/auth/token",
            json={"username": ADMIN_USER, "password": self.password},
            timeout=30,
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    @contextmanager
    def client(self) -> Iterator[httpx.Client]:
        headers = {"Authorization": f"Bearer {self.token()}"}
        with httpx.Client(base_url=f"{self.base_url}/api/v2", headers=headers, timeout=30) as c:
            yield c

    def health(self) -> dict[str, Any]:
        response = httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def wait_healthy(self, timeout: float) -> None:
        def probe() -> bool | None:
            self.check_alive()
            health = self.health()
            states = [health.get(part, {}).get("status") for part in HEARTBEAT_COMPONENTS]
            ok = health["metadatabase"]["status"] == "healthy" and all(
                state == "healthy" for state in states
            )
            return True if ok else None

        wait_for(probe, timeout=timeout, what="every component to report healthy")
        self.timings["healthy_s"] = time.monotonic() - self.started_at
        self.warm_up_execution_api(timeout)

    def warm_up_execution_api(self, timeout: float) -> None:
        """The api-server builds its versioned execution API on the first request to it,
        blocking every other request meanwhile (48 s seen on 2 busy cores). Pay that here
        rather than inside the first task's start, whose retries then fail the task."""
        from airflow.sdk.api.datamodels._generated import API_VERSION

        started = time.monotonic()
        response = httpx.patch(
            f"{self.base_url}/execution/task-instances/{uuid.uuid4()}/run",
            headers={"Authorization": "Bearer not-a-token", "Airflow-API-Version": API_VERSION},
            json={},
            timeout=timeout,
        )
        if response.status_code < 400:
            raise StackError(f"a bogus token was accepted: {response.status_code}")
        self.timings["execution_api_warm_up_s"] = time.monotonic() - started

    def wait_dag(self, client: httpx.Client, dag_id: str, timeout: float = 120) -> dict[str, Any]:
        """Wait until the dag-processor has serialized `dag_id`; fail fast on import errors."""

        def probe() -> dict[str, Any] | None:
            self.check_alive()
            errors = client.get("/importErrors").json()["import_errors"]
            if errors:
                raise StackError(f"DAG import errors: {errors}")
            response = client.get(f"/dags/{dag_id}")
            if response.status_code != 200:
                return None
            details = client.get(f"/dags/{dag_id}/details")
            return dict(response.json()) if details.status_code == 200 else None

        return wait_for(probe, timeout=timeout, what=f"DAG {dag_id} to be parsed")

    def trigger(self, client: httpx.Client, dag_id: str, conf: Mapping[str, Any] = {}) -> str:
        response = written_despite_locks(
            lambda: client.post(
                f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": dict(conf)}
            )
        )
        if response.status_code >= 400:
            raise StackError(f"trigger {dag_id}: {response.status_code} {response.text}")
        return str(response.json()["dag_run_id"])

    def wait_run(
        self, client: httpx.Client, dag_id: str, run_id: str, timeout: float = 300
    ) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            self.check_alive()
            run = client.get(f"/dags/{dag_id}/dagRuns/{run_id}").json()
            return dict(run) if run["state"] in ("success", "failed") else None

        run = wait_for(probe, timeout=timeout, what=f"run {run_id} of {dag_id} to finish")
        if run["state"] == "failed":
            self.raise_on_defer_race(dag_id, run_id)
        return run

    def raise_on_defer_race(self, dag_id: str, run_id: str) -> None:
        """AirflowDeferRace when the scheduler failed a task of this run by the race."""
        path = self.log_file("scheduler")
        text = path.read_text(errors="replace") if path.exists() else ""
        marker = f"<TaskInstance: {dag_id}."
        for line in text.splitlines():
            if DEFER_RACE_LINE in line and marker in line and f" {run_id} " in line:
                raise AirflowDeferRace(f"run {run_id} of {dag_id}: {line.strip()}")


def launch_stack(
    home: Path,
    dags_folder: Path,
    *,
    extra_env: Mapping[str, str] = {},
    timeout: float = 240,
    port: int | None = None,
    prefixes: Mapping[str, list[str]] = {},
) -> AirflowStack:
    """Migrate the DB and spawn the four components without waiting for them, so the
    caller can start other things (the control plane) while Airflow boots. Then call
    `wait_healthy`, and always `stop`. `port`: the api-server's (default: a free one);
    `prefixes`: words before a component's command, by component."""
    started = time.monotonic()
    port = free_port() if port is None else port
    password = secrets.token_urlsafe(16)
    home.mkdir(parents=True, exist_ok=True)
    (home / "passwords.json").write_text(json.dumps({ADMIN_USER: password}))
    stack = AirflowStack(
        home=home,
        dags_folder=dags_folder,
        port=port,
        env=airflow_environment(home, dags_folder, port, extra_env),
        password=password,
        started_at=started,
        prefixes=prefixes,
    )
    migrate(AIRFLOW_BIN, stack.env, timeout)  # a copy of a migrated SQLite, or migrated
    stack.timings["db_migrate_s"] = time.monotonic() - started
    try:
        for name in COMPONENTS:
            stack.start_component(name)
    except BaseException:
        stack.stop()
        raise
    return stack


@contextmanager
def running_stack(
    home: Path, dags_folder: Path, *, extra_env: Mapping[str, str] = {}, timeout: float = 240
) -> Iterator[AirflowStack]:
    stack = launch_stack(home, dags_folder, extra_env=extra_env, timeout=timeout)
    try:
        stack.wait_healthy(timeout)
        yield stack
    finally:
        stack.stop()


PLUGIN_ENTRY_POINT = "sparkk8s_spark_ui"


def plugin_installed() -> bool:
    """Whether the venv's install declares our `airflow.plugins` entry point (a reinstall
    after pyproject.toml changed); otherwise the plugins folder loads it."""
    return any(ep.name == PLUGIN_ENTRY_POINT for ep in entry_points(group="airflow.plugins"))
