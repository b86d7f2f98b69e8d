"""Many deferred tasks of ours in one real Airflow triggerer (issue 28, item 1; issue 47,
item 2 for the worker-free peer).

Real Airflow 3 (api-server, scheduler with the LocalExecutor, dag-processor, one
triggerer) on PostgreSQL, on the KWOK control plane. For each N and each peer:

1. a DAG of N tasks whose drivers KWOK holds Running: `ours` (`SparkK8sSubmitOperator`,
   deferrable: a task process submits, then defers), `worker-free` (the same with
   `start_from_trigger=True`, Airflow 3.3: the scheduler defers each task straight into the
   triggerer, whose trigger submits, follows and ends it; no task process) or `kpo`
   (KubernetesPodOperator, deferrable);
2. the run is triggered; its tasks defer and their drivers are submitted and run;
3. once all N drivers are Running, a quiet window (`--hold` s): what N held applications cost;
4. the drivers are released at a steady pace (`--changes-per-second`); a watch notes when
   each driver's phase turned terminal, and the task's `end_date` in the database ends it.

Measured, over the start (the run's trigger to all N Running), the quiet window and the
release window each: the triggerer's CPU (its process group: supervisor and trigger runner),
the scheduler's own CPU and its executor's (the workers and the task processes they ran),
SQL statements (pg_stat_statements), and kube-apiserver requests (every verb; and the reads:
GET, LIST, WATCH, every resource: KWOK's and the controllers' included, the same at every N);
the triggerer's PSS growth per application; submit (the watch's first sight of the driver
pod) -> driver Running, p50 and p99; and change -> final state in the database, split for a
resumed task where it waits: for the trigger's event (change -> the task `scheduled` again),
for an executor slot (-> `queued`) and for the resumed task process (-> `end_date`). A
worker-free task has no resume: its trigger writes the final state.

    python -m benchmarks.bench_real_triggerer --apps 100,300,1000 --peers ours,worker-free,kpo
    python -m benchmarks.bench_real_triggerer --apps 1000,2000,3000 --peers worker-free \
        --until-short

Airflow's own cadences are its defaults here (heartbeats 5 s, a DAG file parsed every 30 s),
not the e2e tests' 1 s and 5 s. A run that does not reach its next step within `--deadline`
or by `--stop-by` (or whose tasks fail first) gives a row saying how far it got and what
Airflow's machinery was doing (`evidence`), and the next run goes on; with `--until-short`
a peer runs no larger N after that: the largest N one triggerer holds. `[triggerer] capacity`
(Airflow's default 1,000 triggers a triggerer) is raised to N + 50 where that is more, and
the row says so: at the default, that N would need more triggerers. Prints a Markdown table,
one column a run (docs/benchmarks.md's Benchmarks section holds the last one).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.peer_provider import with_peer_on_path
from benchmarks.harness.process_groups import GroupCpu, group_cpu, group_pss_kib

DAG_ID = "bench_triggerer"
WARMUP_DAG_ID = "bench_triggerer_warmup"
NAMESPACE = "bench-triggerer"
READ_VERBS = ("GET", "LIST", "WATCH")
TASK_ID_LABEL = "sparkk8s.io/task-id"
TERMINAL = ("Succeeded", "Failed")
FAILED_STATES = ("failed", "upstream_failed", "up_for_retry")
PEERS = {
    "ours": "SparkK8sSubmitOperator",
    "worker-free": "SparkK8sSubmitOperator, worker-free",
    "kpo": "KubernetesPodOperator",
}
# Airflow's `[triggerer] capacity` (config.yml of 3.3: "How many triggers a single Triggerer
# will run at once"): past it a deployment needs a second triggerer; this bench raises it.
DEFAULT_CAPACITY = 1000
# What our driver pods request (Spark's default is a whole core): with it, KWOK's pod count
# bounds a node, not its 64 CPUs. The peer's busybox pods request nothing.
DRIVER_CPU = "100m"
PODS_PER_NODE = 200  # of KWOK's 250 a node, some room for the scheduler's spread

# Each DAG file holds the measured DAG (N tasks) and a one-task warm-up DAG, run first so the
# triggerer has loaded the trigger's code before its memory is read.
DAG_HEADER = '''"""{apps} deferred tasks whose pods KWOK holds Running (bench_real_triggerer)."""
import datetime

from airflow.sdk import DAG
{imports}
for dag_id, count, prefix in (("{dag_id}", {apps}, "app_"), ("{warmup_id}", 1, "warmup_")):
    with DAG(
        dag_id,
        schedule=None,
        catchup=False,
        start_date=datetime.datetime(2024, 1, 1),
        max_active_tasks=count,
    ):
        for index in range(count):
'''
OURS_IMPORT = "from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator\n"
IMPORTS = {
    "ours": OURS_IMPORT,
    "worker-free": OURS_IMPORT,
    "kpo": "from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator\n",
}
OURS_TASK = """            SparkK8sSubmitOperator(
                task_id=f"{prefix}{index}",
                application="local:///opt/spark/examples/jars/spark-examples.jar",
                java_class="org.apache.spark.examples.SparkPi",
                image="apache/spark:4.0.0",
                {mode},
                conf={
                    "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
                    "spark.kubernetes.driver.request.cores": "{driver_cpu}",
                },
            )
"""
TASKS = {
    "ours": OURS_TASK.replace("{mode}", "deferrable=True"),
    # No task process: the scheduler defers each task straight into the triggerer, whose
    # trigger submits the driver, follows it and ends the task (Airflow 3.3).
    "worker-free": OURS_TASK.replace("{mode}", "start_from_trigger=True"),
    # The peer: KubernetesPodOperator, deferrable, its pod labelled as our drivers are so one
    # watch serves both; no logs (KWOK has none), pods deleted at the end as by default.
    "kpo": """            KubernetesPodOperator(
                task_id=f"{prefix}{index}",
                name=f"{prefix[:-1]}-{index}",
                namespace="{namespace}",
                image="busybox",
                kubernetes_conn_id="kubernetes_bench",
                deferrable=True,
                get_logs=False,
                annotations={"kwok.sparkk8s.io/hold": "true"},
                labels={"spark-role": "driver", "sparkk8s.io/task-id": f"{prefix}{index}"},
            )
""",
}


def dag_file(peer: str, apps: int) -> str:
    header = DAG_HEADER.format(
        apps=apps, dag_id=DAG_ID, warmup_id=WARMUP_DAG_ID, imports=IMPORTS[peer]
    )
    task = TASKS[peer].replace("{namespace}", NAMESPACE).replace("{driver_cpu}", DRIVER_CPU)
    return header + task


@dataclass(frozen=True)
class Snapshot:
    at: float
    triggerer: GroupCpu
    scheduler: GroupCpu
    statements: int
    reads: int
    log_reads: int = 0  # of `reads`, the pod log reads
    requests: int = 0  # every verb: the worker-free trigger's creates count here, not in reads

    def per_minute(self, later: Snapshot) -> dict[str, float]:
        minutes = (later.at - self.at) / 60
        return {
            "triggerer_cpu_s": later.triggerer.leader
            + later.triggerer.others
            - self.triggerer.leader
            - self.triggerer.others,
            "scheduler_cpu_s": later.scheduler.leader - self.scheduler.leader,
            "executor_cpu_s": later.scheduler.others - self.scheduler.others,
            "statements_per_min": (later.statements - self.statements) / minutes,
            "reads_per_min": (later.reads - self.reads) / minutes,
            "log_reads_per_min": (later.log_reads - self.log_reads) / minutes,
            "requests_per_min": (later.requests - self.requests) / minutes,
            "seconds": later.at - self.at,
        }


def read_requests(metrics_text: str, logs_only: bool = False) -> int:
    """GET, LIST and WATCH requests, and pod log reads: kube-apiserver counts those as
    CONNECT on the `log` subresource (a read all the same: our trigger polls the driver's
    log while it streams it into the task log)."""
    total = 0
    for line in metrics_text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        found = re.search(r'verb="([^"]*)"', line)
        verb = found.group(1) if found else ""
        log_read = verb == "CONNECT" and 'subresource="log"' in line
        if log_read or (not logs_only and verb in READ_VERBS):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def all_requests(metrics_text: str) -> int:
    """Every request kube-apiserver served, whatever its verb."""
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in metrics_text.splitlines()
        if line.startswith("apiserver_request_total{")
    )


@dataclass(frozen=True)
class Resume:
    state: str
    scheduled: float  # epoch seconds; 0 when the column is empty
    queued: float
    ended: float


# The stages timed, as (name, from, to): from the driver's submission (the watch's first
# sight of its pod: the create request, whoever sent it) to Running, and where a task waits
# between its pod's change (the end KWOK was let to play) and its final state.
SUBMIT_STAGE = ("submit -> driver Running", "created", "running")
FINAL_STAGE = ("change -> final state", "changed", "ended")
RESUME_STAGES = (
    ("change -> scheduled (the trigger's event)", "changed", "scheduled"),
    ("scheduled -> queued (an executor slot)", "scheduled", "queued"),
    ("queued -> final state (the resumed process)", "queued", "ended"),
)
STAGES = (SUBMIT_STAGE, FINAL_STAGE, *RESUME_STAGES)


def stages_of(peer: str) -> tuple[tuple[str, str, str], ...]:
    """A worker-free task is never resumed: its trigger writes the final state, and its
    `scheduled_dttm` is the first scheduling's, before the driver even existed."""
    return (SUBMIT_STAGE, FINAL_STAGE) if peer == "worker-free" else STAGES


def stage_percentiles(
    seen: dict[str, dict[str, float]],
    resumes: dict[str, Resume],
    stages: tuple[tuple[str, str, str], ...] = STAGES,
) -> dict[str, tuple[float, float]]:
    """p50 and p99 of each stage, over the tasks whose change the watch saw (`seen`: moment
    -> task -> epoch s) and for which it and the database hold both of the stage's moments."""
    found: dict[str, tuple[float, float]] = {}
    for name, start, end in stages:
        spans = []
        for task, resume in resumes.items():
            if task not in seen["changed"]:
                continue
            moments = {kind: by_task.get(task, 0.0) for kind, by_task in seen.items()}
            moments.update(vars(resume))
            if moments.get(start) and moments.get(end):
                spans.append(moments[end] - moments[start])
        found[name] = (percentile(spans, 0.50), percentile(spans, 0.99))
    return found


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


class Database:
    """Direct reads of Airflow's metadata database (not through the API: its own load)."""

    def __init__(self, port: int) -> None:
        import psycopg2

        self.connection = psycopg2.connect(
            host="127.0.0.1", port=port, user="airflow", dbname="postgres"
        )
        self.connection.autocommit = True

    def one(self, sql: str, *params: Any) -> Any:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone() if cursor.description else None
        return row[0] if row else None

    def states(self, run_id: str, dag_id: str = DAG_ID) -> dict[str, int]:
        with self.connection.cursor() as cursor:
            cursor.execute(
                "select state, count(*) from task_instance where dag_id = %s and run_id = %s"
                " group by state",
                (dag_id, run_id),
            )
            return {str(state): int(count) for state, count in cursor.fetchall()}

    def resumes(self, run_id: str) -> dict[str, Resume]:
        """Each task's last try: `scheduled_dttm` is set again when its trigger's event
        lands, `queued_dttm` when the scheduler gives it an executor slot."""
        with self.connection.cursor() as cursor:
            cursor.execute(
                "select task_id, state, extract(epoch from scheduled_dttm),"
                " extract(epoch from queued_dttm), extract(epoch from end_date)"
                " from task_instance where dag_id = %s and run_id = %s",
                (DAG_ID, run_id),
            )
            return {
                task: Resume(str(state), float(sched or 0), float(queued or 0), float(end or 0))
                for task, state, sched, queued, end in cursor.fetchall()
            }

    def statements(self) -> int:
        # Our own probes are left out by their text (each names task_instance or this view).
        return int(
            self.one(
                "select coalesce(sum(calls), 0) from pg_stat_statements"
                " where query not like '%%task_instance where dag_id%%'"
                " and query not like '%%pg_stat_statements%%'"
            )
        )


class DriverWatch(threading.Thread):
    """Notes, by task id, when each driver was first seen (its submission), first seen
    Running, and first seen terminal (its change)."""

    def __init__(self, plane: Any) -> None:
        super().__init__(daemon=True)
        from kubernetes import config as k8s_config

        self.api = k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))
        self.created: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.changed: dict[str, float] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        from kubernetes import client as k8s_client
        from kubernetes import watch

        core = k8s_client.CoreV1Api(self.api)
        while not self.stopping.is_set():
            stream = watch.Watch().stream(
                core.list_namespaced_pod,
                NAMESPACE,
                label_selector="spark-role=driver",
                timeout_seconds=30,
            )
            for event in stream:
                pod = event["object"]
                task = (pod.metadata.labels or {}).get(TASK_ID_LABEL)
                if not task:
                    continue
                now = time.time()
                self.created.setdefault(task, now)
                if pod.status.phase == "Running":
                    self.running.setdefault(task, now)
                if pod.status.phase in TERMINAL:
                    self.changed.setdefault(task, now)

    def moments(self) -> dict[str, dict[str, float]]:
        return {"created": self.created, "running": self.running, "changed": self.changed}


def admin_api(plane: Any) -> Any:
    from kubernetes import config as k8s_config

    return k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))


def driver_names(plane: Any, task_prefix: str) -> list[str]:
    from testenv.harness.kube import request

    body = request(
        admin_api(plane),
        "GET",
        f"/api/v1/namespaces/{NAMESPACE}/pods",
        params={"labelSelector": "spark-role=driver"},
    )
    return [
        item["metadata"]["name"]
        for item in body["items"]
        if item["metadata"]["labels"].get(TASK_ID_LABEL, "").startswith(task_prefix)
        and item["status"].get("phase") not in TERMINAL
    ]


def release(plane: Any, names: list[str], per_second: float) -> None:
    """Lets KWOK end each held driver (exit 0 after 100 ms), at a steady pace."""
    from testenv.harness.kube import session

    body = {
        "metadata": {
            "annotations": {"kwok.sparkk8s.io/hold": "false", "kwok.sparkk8s.io/run-ms": "100"}
        }
    }
    headers = {"Content-Type": "application/merge-patch+json"}
    start = time.monotonic()
    with session(admin_api(plane), timeout=60) as client:
        for index, name in enumerate(names):
            delay = start + index / per_second - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
            client.patch(path, json=body, headers=headers).raise_for_status()


def airflow_settings(apps: int, postgres_url: str, parallelism: int) -> dict[str, str]:
    return {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": postgres_url,
        "AIRFLOW__CORE__PARALLELISM": str(parallelism),
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": str(apps),
        "AIRFLOW__CORE__DEFAULT_POOL_TASK_SLOT_COUNT": str(max(128, apps)),
        # Room beside the N for a warm-up trigger not yet cleaned away.
        "AIRFLOW__TRIGGERER__CAPACITY": str(capacity(apps)),
        # Airflow's defaults, where the e2e stack shortens them for the tests' sake. A DAG of
        # 1,000 tasks parsed every 5 s would take CPU from what is measured.
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "5",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "5",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "30",
        # A resumed task waits `scheduled`, not `queued`, for its slot, so this never ends one
        # that is only late; the e2e stack's 300 s would fail a task the executor is slow to
        # start on a loaded machine.
        "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "3600",
        # The peer's provider import alone passed the default 30 s on a loaded machine.
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
        "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "600",
    }


def capacity(apps: int) -> int:
    """The `[triggerer] capacity` a run of N sets: Airflow's default, or N and room for the
    warm-up's trigger when that is more (one triggerer then holds what a deployment at the
    default would spread over two or more)."""
    return max(DEFAULT_CAPACITY, apps + 50)


def capacity_note(apps: int) -> str:
    raised = capacity(apps)
    if raised == DEFAULT_CAPACITY:
        return f"{raised:,} (the default)"
    needed = math.ceil(apps / DEFAULT_CAPACITY)
    return f"{raised:,}, raised: at the default {DEFAULT_CAPACITY:,}, {needed} triggerers"


def snapshot(plane: Any, stack: Any, database: Database) -> Snapshot:
    metrics = plane.metrics_text()
    return Snapshot(
        at=time.monotonic(),
        triggerer=group_cpu(stack.processes["triggerer"].pid),
        scheduler=group_cpu(stack.processes["scheduler"].pid),
        statements=database.statements(),
        reads=read_requests(metrics),
        log_reads=read_requests(metrics, logs_only=True),
        requests=all_requests(metrics),
    )


class NotReached(Exception):
    """A run stopped short: its deadline passed, or its tasks failed before they deferred."""


def wait_until(probe: Any, timeout: float, what: str, stack: Any) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stack.check_alive()
        found = probe()
        if found:
            return found
        time.sleep(1.0)
    raise NotReached(f"{what}: not within {timeout:.0f} s")


def allowed(args: argparse.Namespace, now: float | None = None) -> float:
    """Seconds the next wait may take: `--deadline`, or less if `--stop-by` comes first."""
    if args.stop_by is None:
        return float(args.deadline)
    left = args.stop_by - (time.time() if now is None else now)
    return max(0.0, min(float(args.deadline), left))


def deferred_all(states: dict[str, int], count: int) -> bool:
    """True once `count` tasks are deferred; a task that failed first will never defer."""
    failed = {state: n for state, n in states.items() if state in FAILED_STATES and n}
    if failed:
        raise NotReached(f"tasks failed before deferring: {failed} (all: {states})")
    return states.get("deferred", 0) >= count


def run_size(peer: str, apps: int, args: argparse.Namespace) -> dict[str, Any]:
    from testenv.airflow_stack import REPO, launch_stack
    from testenv.controlplane import ControlPlane
    from testenv.postgres import Postgres

    preload = {"shared_preload_libraries": "pg_stat_statements"}
    nodes = kwok_nodes(apps)
    with (
        ControlPlane(node_count=nodes) as plane,
        Postgres(settings=preload) as postgres,
        tempfile.TemporaryDirectory(prefix="sparkk8s-bench-triggerer-") as tmp,
    ):
        dags = Path(tmp, "dags")
        dags.mkdir()
        (dags / "bench_triggerer.py").write_text(dag_file(peer, apps))
        settings = airflow_settings(apps, postgres.sqlalchemy_url, args.parallelism)
        if peer == "kpo":  # the peer's provider, beside ours
            settings["PYTHONPATH"] = with_peer_on_path(str(REPO))
        stack = launch_stack(Path(tmp, "home"), dags, extra_env=settings, timeout=600)
        try:
            return measure(plane, stack, postgres, peer, apps, args)
        finally:
            stack.stop()


def put_connections(stack: Any, plane: Any) -> None:
    extra = json.dumps({"kube_config_path": str(plane.admin_kubeconfig), "namespace": NAMESPACE})
    stack.put_connection("spark_k8s_default", "spark_k8s", extra=extra)
    stack.put_connection("kubernetes_bench", "kubernetes", extra=extra)


def kwok_nodes(apps: int) -> int:
    """KWOK nodes enough to hold every driver Running at once (a Pending driver is deferred
    too, but is not what is measured, and its startup timeout fails it), and one more."""
    return max(3, math.ceil(apps / PODS_PER_NODE) + 1)


def running_drivers(plane: Any, task_prefix: str) -> int:
    from testenv.harness.kube import request

    body = request(
        admin_api(plane),
        "GET",
        f"/api/v1/namespaces/{NAMESPACE}/pods",
        params={"labelSelector": "spark-role=driver"},
    )
    return sum(
        1
        for item in body["items"]
        if item["metadata"]["labels"].get(TASK_ID_LABEL, "").startswith(task_prefix)
        and item["status"].get("phase") == "Running"
    )


def start_run(stack: Any, dag_id: str) -> str:
    with stack.client() as client:
        stack.wait_dag(client, dag_id, timeout=900)
        return str(stack.trigger(client, dag_id))


def wait_deferred(
    stack: Any, database: Database, dag_id: str, run_id: str, count: int, timeout: float
) -> None:
    wait_until(
        lambda: deferred_all(database.states(run_id, dag_id), count),
        timeout,
        f"{count} tasks of {dag_id} deferred",
        stack,
    )


def wait_ended(
    stack: Any, database: Database, dag_id: str, run_id: str, count: int, t: float
) -> None:
    def ended() -> bool:
        states = database.states(run_id, dag_id)
        return sum(states.get(s, 0) for s in ("success", "failed")) >= count

    wait_until(ended, t, f"{count} tasks of {dag_id} ended", stack)


def all_running(plane: Any, database: Database, run_id: str, apps: int) -> bool:
    """True once N drivers are Running; a task that failed first (a worker-free task fails
    in its trigger, after it deferred) will never have one."""
    states = database.states(run_id)
    failed = {state: n for state, n in states.items() if state in FAILED_STATES and n}
    if failed:
        raise NotReached(f"tasks failed before their drivers ran: {failed} (all: {states})")
    return running_drivers(plane, "app_") >= apps


BLOCKED_LINES = ("was blocked for", "appears deadlocked", "capacity")


def evidence(stack: Any, database: Database, watch: DriverWatch, since: Snapshot | None) -> str:
    """What Airflow's machinery was doing when a run stopped short: the triggers in the
    database and how many a triggerer has taken, the triggerer's last heartbeat, the drivers
    the watch saw, the triggerer's share of a core since the run's trigger, and how often its
    log said its event loop was blocked."""
    import psycopg2

    found = []
    try:
        with database.connection.cursor() as cursor:
            cursor.execute("select count(*), count(triggerer_id) from trigger")
            total, assigned = cursor.fetchone()
        found.append(f"triggers {total} ({assigned} assigned)")
        age = database.one(
            "select extract(epoch from now() - max(latest_heartbeat)) from job"
            " where job_type = 'TriggererJob' and state = 'running'"
        )
        found.append(f"triggerer heartbeat {float(age or math.nan):.0f} s ago")
    except psycopg2.Error as error:  # the database itself may be what failed
        found.append(f"database unreadable: {error}")
    found.append(
        f"drivers seen {len(watch.created)}, Running {len(watch.running)},"
        f" ended {len(watch.changed)}"
    )
    if since is not None:
        now = group_cpu(stack.processes["triggerer"].pid)
        busy = now.leader + now.others - since.triggerer.leader - since.triggerer.others
        found.append(f"triggerer {busy / (time.monotonic() - since.at):.0%} of a core")
    log = stack.log_file("triggerer")
    text = log.read_text(errors="replace") if log.exists() else ""
    for marker in BLOCKED_LINES:
        found.append(f"triggerer log lines with {marker!r}: {text.count(marker)}")
    return "; ".join(found)


def measure(
    plane: Any, stack: Any, postgres: Any, peer: str, apps: int, args: argparse.Namespace
) -> dict[str, Any]:
    from testenv.harness.kube import create_namespace

    create_namespace(plane, NAMESPACE)
    stack.wait_healthy(timeout=600)
    database = Database(postgres.port)
    database.one("create extension if not exists pg_stat_statements")
    put_connections(stack, plane)
    watch = DriverWatch(plane)
    watch.start()
    row: dict[str, Any] = {"peer": peer, "apps": apps, "capacity": capacity_note(apps)}
    started: Snapshot | None = None
    try:
        # The warm-up: one task deferred and released, so the trigger's code is loaded.
        warm_run = start_run(stack, WARMUP_DAG_ID)
        wait_deferred(stack, database, WARMUP_DAG_ID, warm_run, 1, allowed(args))
        wait_until(
            lambda: running_drivers(plane, "warmup_") >= 1, allowed(args), "warm-up Running", stack
        )
        release(plane, driver_names(plane, "warmup_"), args.changes_per_second)
        wait_ended(stack, database, WARMUP_DAG_ID, warm_run, 1, allowed(args))
        triggerer = stack.processes["triggerer"].pid
        idle_pss = group_pss_kib(triggerer)
        started = snapshot(plane, stack, database)
        run_id = row["run_id"] = start_run(stack, DAG_ID)
        wait_deferred(stack, database, DAG_ID, run_id, apps, allowed(args))
        row["deferred_s"] = time.monotonic() - started.at
        wait_until(
            lambda: all_running(plane, database, run_id, apps),
            allowed(args),
            f"{apps} drivers Running",
            stack,
        )
        quiet_from = snapshot(plane, stack, database)
        row["running_s"] = quiet_from.at - started.at
        row["start"] = started.per_minute(quiet_from)
        time.sleep(args.hold)  # a measured window, not a wait for something
        quiet_to = snapshot(plane, stack, database)
        row["pss_per_app_kib"] = (group_pss_kib(triggerer) - idle_pss) / apps
        row["quiet"] = quiet_from.per_minute(quiet_to)
        release(plane, driver_names(plane, "app_"), args.changes_per_second)
        wait_ended(stack, database, DAG_ID, run_id, apps, allowed(args))
        row["release"] = quiet_to.per_minute(snapshot(plane, stack, database))
    except NotReached as stopped:
        row["not_reached"] = str(stopped)
        row["states"] = database.states(row.get("run_id", ""), DAG_ID)
        row["evidence"] = evidence(stack, database, watch, started)
        row["load"] = os.getloadavg()[0]
        return row
    finally:
        watch.stopping.set()
    resumes = database.resumes(run_id)
    row["stages"] = stage_percentiles(watch.moments(), resumes, stages_of(peer))
    row["timed"] = sum(1 for task in resumes if task in watch.changed)
    row["failed"] = sum(1 for resume in resumes.values() if resume.state != "success")
    row["load"] = os.getloadavg()[0]
    return row


def table(rows: list[dict[str, Any]], per_second: float) -> str:
    """One column a run, one line a figure; a run that stopped short says where, and what
    Airflow's machinery was doing then."""
    columns = [f"{PEERS[row['peer']]}, N = {row['apps']:,}" for row in rows]
    lines = ["| figure | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(rows)]
    for label, cell in FIGURES:
        always = label in ALWAYS_SHOWN
        cells = [cell(row) if "not_reached" not in row or always else "" for row in rows]
        if label == FIGURES[0][0]:
            cells = [
                f"not reached: {row['not_reached']}; states {row['states']};"
                f" {row.get('evidence', '')}"
                if "not_reached" in row
                else text
                for row, text in zip(rows, cells, strict=True)
            ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Drivers released at {per_second:g} a second. Stages are timed over the tasks")
    lines.append("whose change the watch saw (every one, unless a line says otherwise).")
    for row in rows:
        if "not_reached" not in row and row["timed"] != row["apps"]:
            lines.append(f"- {row['peer']} N={row['apps']}: {row['timed']} timed")
    for peer, apps in largest_completed(rows).items():
        lines.append(f"- {PEERS[peer]}: the largest N completed here, {apps:,}")
    return "\n".join(lines)


def largest_completed(rows: list[dict[str, Any]]) -> dict[str, int]:
    """By peer, the largest N whose run ended every task, where a run of that peer stopped
    short (the question `--until-short` asks); 0 when none completed."""
    found: dict[str, int] = {}
    for peer in dict.fromkeys(row["peer"] for row in rows):
        of_peer = [row for row in rows if row["peer"] == peer]
        if any("not_reached" in row for row in of_peer):
            done = [row["apps"] for row in of_peer if "not_reached" not in row]
            found[peer] = max(done, default=0)
    return found


def per_minute(row: dict[str, Any], window: str, figure: str) -> float:
    return float(60 * row[window][figure] / row[window]["seconds"])


def held_cpu_per_minute(row: dict[str, Any]) -> float:
    return per_minute(row, "quiet", "triggerer_cpu_s")


def per_app_ms(row: dict[str, Any], seconds: float) -> str:
    return f"{1000 * seconds / row['apps']:.1f} ms an application"


def stage_cell(name: str) -> Any:
    def cell(row: dict[str, Any]) -> str:
        if name not in row["stages"]:
            return "none: no task process"
        p50, p99 = row["stages"][name]
        return f"{p50:.1f} / {p99:.1f} s"

    return cell


def cpu_cell(window: str) -> Any:
    def cell(row: dict[str, Any]) -> str:
        figures = row[window]
        return (
            f"{figures['triggerer_cpu_s']:.1f} ({per_app_ms(row, figures['triggerer_cpu_s'])})"
            f" / {figures['scheduler_cpu_s']:.1f} / {figures['executor_cpu_s']:.1f} s"
        )

    return cell


def rates_cell(window: str) -> Any:
    def cell(row: dict[str, Any]) -> str:
        figures = row[window]
        return (
            f"{figures['statements_per_min']:,.0f}, {figures['requests_per_min']:,.0f}"
            f" ({figures['reads_per_min']:,.0f} reads)"
        )

    return cell


CPU_SPLIT = "triggerer CPU (an application) / scheduler / executor"
RATES = "SQL statements, API requests a minute"
FIGURES: list[tuple[str, Any]] = [
    (
        "all N deferred after the run's trigger",
        lambda r: f"{r['deferred_s']:.0f} s ({r['apps'] / r['deferred_s']:.1f} a second)",
    ),
    ("[triggerer] capacity", lambda r: r.get("capacity", "")),
    ("and their drivers all Running after", lambda r: f"{r['running_s']:.0f} s"),
    (f"start (the trigger to all Running): {CPU_SPLIT}", cpu_cell("start")),
    (f"start: {RATES}", rates_cell("start")),
    ("triggerer PSS growth per deferred task", lambda r: f"{r['pss_per_app_kib']:.0f} KiB"),
    (
        "held: API reads a minute (of them pod log reads)",
        lambda r: f"{r['quiet']['reads_per_min']:,.0f} ({r['quiet']['log_reads_per_min']:,.0f})",
    ),
    (
        "held: triggerer CPU a minute",
        lambda r: f"{held_cpu_per_minute(r):.1f} s ({per_app_ms(r, held_cpu_per_minute(r))})",
    ),
    (
        "held: scheduler CPU a minute",
        lambda r: f"{per_minute(r, 'quiet', 'scheduler_cpu_s'):.1f} s",
    ),
    ("held: SQL statements a minute", lambda r: f"{r['quiet']['statements_per_min']:,.0f}"),
    *((f"{name}, p50 / p99", stage_cell(name)) for name, _, _ in STAGES),
    (
        "release: all N ended after the release began",
        lambda r: (
            f"{r['release']['seconds']:.0f} s ({r['apps'] / r['release']['seconds']:.1f} a second)"
        ),
    ),
    (
        "release: scheduler CPU / executor CPU (the resumes)",
        lambda r: f"{r['release']['scheduler_cpu_s']:.1f} / {r['release']['executor_cpu_s']:.1f} s",
    ),
    (
        "release: triggerer CPU",
        lambda r: (
            f"{r['release']['triggerer_cpu_s']:.1f} s"
            f" ({per_app_ms(r, r['release']['triggerer_cpu_s'])})"
        ),
    ),
    (
        "release: SQL statements, API reads a minute",
        lambda r: (
            f"{r['release']['statements_per_min']:,.0f}, {r['release']['reads_per_min']:,.0f}"
        ),
    ),
    ("tasks not ending in success", lambda r: f"{r['failed']}"),
    ("1-minute load when the run ended", lambda r: f"{r['load']:.1f}"),
]
ALWAYS_SHOWN = ("[triggerer] capacity", "1-minute load when the run ended")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", default="100", help="sizes, comma separated, in order")
    parser.add_argument(
        "--peers", default="ours", help=f"comma separated, of {', '.join(PEERS)}: ours,worker-free"
    )
    parser.add_argument("--changes-per-second", type=float, default=5.0)
    parser.add_argument("--hold", type=float, default=60.0, help="the quiet window, s")
    parser.add_argument("--parallelism", type=int, default=8, help="[core] parallelism")
    parser.add_argument("--deadline", type=float, default=3600.0, help="each wait's, s")
    parser.add_argument("--stop-by", type=float, default=None, help="epoch s: no wait goes past it")
    parser.add_argument(
        "--until-short",
        action="store_true",
        help="the largest N one triggerer holds: a peer runs no larger N after its first run "
        "that stops short (e.g. --apps 1000,2000,3000,4000)",
    )
    args = parser.parse_args()
    peers = args.peers.split(",")
    unknown = [peer for peer in peers if peer not in PEERS]
    if unknown:
        parser.error(f"--peers {args.peers}: unknown {unknown}; known: {', '.join(PEERS)}")
    rows: list[dict[str, Any]] = []
    stopped: set[str] = set()
    sizes = [int(n) for n in args.apps.split(",")]
    for apps, peer in ((n, p) for n in sizes for p in peers):
        if peer in stopped:
            continue
        row = run_size(peer, apps, args)
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
        if args.until_short and "not_reached" in row:
            stopped.add(peer)
    print(table(rows, args.changes_per_second))


if __name__ == "__main__":
    main()
