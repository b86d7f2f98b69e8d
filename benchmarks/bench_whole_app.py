"""The whole application, waiting, four ways in one sitting (issue 28, item 2; issue 47,
item 3): `python -m benchmarks.bench_whole_app [--rounds 2] [--idle 60]`.

The same PySpark Pi (`pi.py 4 200000`, a 512m driver and two 512m executors, 200m cores a
pod) on the real node (testenv/realnode: the kubelet, containerd and runc), as the
documented submitter (docs/rbac.yaml), each way waiting for the application's end:
- `spark-submit` 4.3.0 in cluster mode with `waitAppCompletion=true` (its default), as
  SparkSubmitOperator runs it: a JVM on the Airflow side for the application's whole life;
- `sparkk8s-submit`, which waits too;
- the deferred operator (`SparkK8sSubmitOperator`, deferrable) and
- the worker-free operator (the same with `start_from_trigger=True`: no task process, the
  triggerer submits, follows and ends it), both through a real Airflow stack
  (testenv/airflow_stack.py: api-server, scheduler with the LocalExecutor, dag-processor,
  triggerer; SQLite; Airflow's 5 s heartbeats), started once for the sitting.

Each round runs the four in turn, the order rotated a round. A CLI way is a child process
read through wait4 from a small launcher (see LAUNCHER): wall time, CPU (user + system, its
reaped children included) and peak RSS (the largest of the process and its children). An
operator way is one DAG run (`run_in_stack`): wall from the trigger to the run's end; CPU of
the scheduler's process group (its executor's workers and the task processes they ran
included) and the triggerer's, each less its idle rate (measured over `--idle` s with
nothing running, just before) times the run's wall; and the two groups' peak RSS and PSS
(summed, sampled each second) less their sum at the trigger. A run is killed (a CLI) or
given up (a DAG run) after RUN_TIMEOUT_S and counted as failed. The 1-minute load is noted
at each run's start and end. Nothing is asserted: the table goes into docs/benchmarks.md by
hand.
`--airflow-floors` measures instead Airflow's own part of a task run by `airflow dags test`
(FLOORS), no Spark.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAMESPACE = "bench-whole"
DAG_ID = "bench_whole_app"
WORKER_FREE_DAG_ID = "bench_whole_app_worker_free"
SPARK_LINE = "4.3.0"
WAYS = ("spark-submit 4.3.0", "sparkk8s-submit", "deferred operator", "worker-free operator")
OPERATOR_WAYS = {WAYS[2]: DAG_ID, WAYS[3]: WORKER_FREE_DAG_ID}
IDLE_S = 60.0  # the idle window before each operator run, s (`--idle`)
PI_ARGS = ("4", "200000")


def spark_conf(image: str, service_account: str) -> dict[str, str]:
    """What both CLIs are given, and what the operator's arguments below amount to."""
    return {
        "spark.kubernetes.namespace": NAMESPACE,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": service_account,
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.instances": "2",
        "spark.kubernetes.driver.request.cores": "200m",
        "spark.kubernetes.executor.request.cores": "200m",
        "spark.kubernetes.submission.waitAppCompletion": "true",
    }


def cli_argv(tool: str, server: str, name: str, conf: Mapping[str, str], pi: str) -> list[str]:
    argv = [tool, "--master", f"k8s://{server}", "--deploy-mode", "cluster", "--name", name]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return [*argv, pi, *PI_ARGS]


DAG_FILE = '''"""One PySpark Pi, deferrable, and the same worker-free (bench_whole_app)."""
import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

for dag_id, mode in (
    ("{dag_id}", {{"deferrable": True}}),
    ("{worker_free_dag_id}", {{"start_from_trigger": True}}),
):
    with DAG(dag_id, schedule=None, catchup=False, start_date=datetime.datetime(2026, 1, 1)):
        SparkK8sSubmitOperator(
            task_id="pi",
            kubernetes_conn_id="spark_k8s_default",
            namespace="{namespace}",
            image="{image}",
            spark_version="{spark_line}",
            application="{pi}",
            name="pi-airflow",
            application_args={args!r},
            driver_memory="512m",
            executor_memory="512m",
            num_executors=2,
            conf={{
                "spark.kubernetes.authenticate.driver.serviceAccountName": "{service_account}",
                "spark.kubernetes.driver.request.cores": "200m",
                "spark.kubernetes.executor.request.cores": "200m",
            }},
            startup_timeout=300,
            run_timeout=1800,
            **mode,
        )
'''


def dag_file(image: str, service_account: str, pi: str) -> str:
    return DAG_FILE.format(
        dag_id=DAG_ID,
        worker_free_dag_id=WORKER_FREE_DAG_ID,
        namespace=NAMESPACE,
        image=image,
        spark_line=SPARK_LINE,
        pi=pi,
        args=list(PI_ARGS),
        service_account=service_account,
    )


def airflow_env(home: Path, dags: Path, kubeconfig: Path, repo: Path) -> dict[str, str]:
    connection = {
        "conn_type": "spark_k8s",
        "extra": {"kube_config_path": str(kubeconfig), "namespace": NAMESPACE},
    }
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    return env | {
        "PYTHONPATH": str(repo),  # the checkout under test, not the venv's editable install
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_K8S_DEFAULT": json.dumps(connection),
    }


@dataclass(frozen=True)
class Run:
    way: str
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    ok: bool
    load: tuple[float, float]  # the 1-minute load at the start and at the end
    # The operator ways only (a running stack's scheduler and triggerer groups; `cpu_s` is
    # their sum, `peak_rss_mib` their peak growth): each group's CPU less its idle rate over
    # the run's wall, the idle CPU so subtracted, and the groups' peak PSS growth.
    scheduler_cpu_s: float = 0.0
    triggerer_cpu_s: float = 0.0
    idle_cpu_s: float = 0.0
    peak_pss_mib: float = 0.0


RUN_TIMEOUT_S = 600  # a run still going then is killed (its process group) and failed

# Linux keeps a process's peak RSS across execve: a child forked (or vforked) from this
# benchmark, which holds the plane's code, starts with this process's RSS as its ru_maxrss
# (sparkk8s-submit read 72 MiB so, 27.8 MiB under /usr/bin/time). So each tool is forked from
# this small launcher instead (`python -I -S`, stdlib only), which reads its child through
# wait4 and writes the figures as JSON. The floor is the launcher's own size: /bin/true read
# 5.9 MiB through it, `sparkk8s-submit --help` 15.0 MiB (15.1 under /usr/bin/time).
LAUNCHER = """
import json, os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as sink:
    json.dump({"wall": time.perf_counter() - started, "code": os.waitstatus_to_exitcode(status),
               "cpu": usage.ru_utime + usage.ru_stime, "maxrss_kib": usage.ru_maxrss}, sink)
"""


def run_child(way: str, argv: list[str], env: Mapping[str, str], log: Path) -> Run:
    load_before = os.getloadavg()[0]
    figures = log.with_suffix(".json")
    launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER, str(figures), *argv]
    with log.open("w") as sink:
        process = subprocess.Popen(
            launcher, env=dict(env), stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
        timer = threading.Timer(RUN_TIMEOUT_S, os.killpg, (process.pid, signal.SIGKILL))
        timer.start()
        try:
            process.wait()
        finally:
            timer.cancel()
    if process.returncode != 0 or not figures.exists():
        print(f"{way}: launcher exit {process.returncode} (killed after {RUN_TIMEOUT_S} s?)")
        return Run(way, float(RUN_TIMEOUT_S), 0.0, 0.0, False, (load_before, os.getloadavg()[0]))
    child = json.loads(figures.read_text())
    return Run(
        way=way,
        wall_s=child["wall"],
        cpu_s=child["cpu"],
        peak_rss_mib=child["maxrss_kib"] / 1024,  # KiB on Linux
        ok=child["code"] == 0,
        load=(load_before, os.getloadavg()[0]),
    )


def reported(run: Run, dag_ok: bool, log: Path) -> Run:
    """The run, failed when its DAG run did not succeed; a failure's log end is printed.
    Every run is printed as a JSON line on stderr as it ends."""
    if run.ok and not dag_ok:
        run = dataclasses.replace(run, ok=False)
    if not run.ok:
        print(f"{run.way} failed; its log's end:\n{log.read_text()[-3000:]}", flush=True)
    print(json.dumps(vars(run)), file=sys.stderr, flush=True)
    return run


class PeakMemory(threading.Thread):
    """The largest RSS and PSS summed over process groups, sampled each second."""

    def __init__(self, pgids: tuple[int, ...]) -> None:
        super().__init__(daemon=True)
        self.pgids = pgids
        self.peak = (0, 0)  # KiB
        self.stopping = threading.Event()

    def run(self) -> None:
        from benchmarks.harness.process_groups import groups_rss_pss_kib

        while True:
            rss, pss = groups_rss_pss_kib(self.pgids)
            self.peak = (max(self.peak[0], rss), max(self.peak[1], pss))
            if self.stopping.wait(1.0):
                return

    def stop(self) -> tuple[int, int]:
        self.stopping.set()
        self.join()
        return self.peak


def groups_cpu(pgids: tuple[int, ...]) -> list[float]:
    """User + system seconds of each group, what it forked and reaped included."""
    from benchmarks.harness.process_groups import group_cpu

    return [sum(vars(group_cpu(pgid)).values()) for pgid in pgids]


def run_in_stack(way: str, stack: Any, dag_id: str, idle_s: float) -> Run:
    """One DAG run through a running stack's scheduler and triggerer: wall from the trigger
    to the run's end (the REST API, polled each 0.5 s), and what the scheduler's group (its
    LocalExecutor's workers and their task processes included) and the triggerer's group
    spent beyond their idle rate, measured just before over `idle_s` with nothing running,
    times the run's wall. Memory: the groups' peak RSS and PSS less their sum at the trigger."""
    from benchmarks.harness.process_groups import groups_rss_pss_kib
    from testenv.airflow_stack import StackError

    pgids = (stack.processes["scheduler"].pid, stack.processes["triggerer"].pid)
    load_before = os.getloadavg()[0]
    idle_from = groups_cpu(pgids)
    time.sleep(idle_s)  # a measured window: the stack idle
    idle_to = groups_cpu(pgids)
    idle_rates = [(to - of) / idle_s for of, to in zip(idle_from, idle_to, strict=True)]
    base_rss, base_pss = groups_rss_pss_kib(pgids)
    sampler = PeakMemory(pgids)
    sampler.start()
    before = groups_cpu(pgids)
    started = time.monotonic()
    ok = True
    try:
        with stack.client() as client:
            run_id = stack.trigger(client, dag_id)
            ok = stack.wait_run(client, dag_id, run_id, RUN_TIMEOUT_S)["state"] == "success"
    except StackError as error:  # the run's timeout, or Airflow's defer race
        print(f"{way}: {error}", flush=True)
        ok = False
    wall = time.monotonic() - started
    after = groups_cpu(pgids)
    peak_rss, peak_pss = sampler.stop()
    net = [to - of - rate * wall for of, to, rate in zip(before, after, idle_rates, strict=True)]
    return Run(
        way=way,
        wall_s=wall,
        cpu_s=sum(net),
        peak_rss_mib=(peak_rss - base_rss) / 1024,
        ok=ok,
        load=(load_before, os.getloadavg()[0]),
        scheduler_cpu_s=net[0],
        triggerer_cpu_s=net[1],
        idle_cpu_s=sum(idle_rates) * wall,
        peak_pss_mib=(peak_pss - base_pss) / 1024,
    )


def last_run_state(home: Path, dag_id: str = DAG_ID) -> str:
    """The state `airflow dags test` left its last run of dag_id in (its exit code alone
    does not say the task succeeded)."""
    with sqlite3.connect(home / "airflow.db") as db:
        row = db.execute(
            "SELECT state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
        ).fetchone()
    return str(row[0]) if row else "no run"


def order(round_index: int) -> list[str]:
    """The ways, rotated a round, so none always runs first on a fresh node."""
    shift = round_index % len(WAYS)
    return [*WAYS[shift:], *WAYS[:shift]]


def cell(runs: list[Run], figure: str, unit: str, digits: int) -> str:
    """Each run's figure in order, a failed one marked and left out of the median."""
    if not runs:
        return ""
    shown = ", ".join(
        f"{getattr(run, figure):.{digits}f}" + ("" if run.ok else " (failed)") for run in runs
    )
    values = [getattr(run, figure) for run in runs if run.ok]
    if len(values) > 1:
        shown += f" (median {statistics.median(values):.{digits}f})"
    return f"{shown} {unit}"


# The operator ways run in a stack: their figures are the Airflow side's, less its idle.
OPERATOR_NOTE = (
    " (operator ways: the scheduler's and triggerer's process groups, less their idle rate)",
    " (operator ways: the two groups' peak growth)",
)
STACK_ROWS = (
    ("operator ways: scheduler group CPU, less idle", "scheduler_cpu_s", "s", 2),
    ("operator ways: triggerer group CPU, less idle", "triggerer_cpu_s", "s", 2),
    ("operator ways: idle CPU subtracted (both groups)", "idle_cpu_s", "s", 2),
    ("operator ways: peak PSS growth (both groups)", "peak_pss_mib", "MiB", 1),
)


def table(runs: list[Run], ways: tuple[str, ...] = WAYS) -> str:
    by_way = {way: [run for run in runs if run.way == way] for way in ways}
    lines = [
        "| waiting on one application | " + " | ".join(ways) + " |",
        "| --- |" + " ---: |" * len(ways),
    ]
    operators = [way for way in ways if way in OPERATOR_WAYS]
    notes = OPERATOR_NOTE if operators else ("", "")
    rows: tuple[tuple[str, str, str, int], ...] = (
        ("wall to the end", "wall_s", "s", 1),
        (f"CPU of the submitting side, user + system{notes[0]}", "cpu_s", "s", 2),
        (f"peak RSS of the submitting side{notes[1]}", "peak_rss_mib", "MiB", 1),
    )
    if operators:
        rows += STACK_ROWS
    for label, figure, unit, digits in rows:
        of_stack = (label, figure, unit, digits) in STACK_ROWS
        cells = [
            cell([] if of_stack and way not in operators else by_way[way], figure, unit, digits)
            for way in ways
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    loads = [
        ", ".join(f"{run.load[0]:.1f}-{run.load[1]:.1f}" for run in by_way[way]) for way in ways
    ]
    lines.append("| 1-minute load, start-end of each run | " + " | ".join(loads) + " |")
    failed = [f"{run.way} (its run {index + 1})" for way, of_way in by_way.items()
              for index, run in enumerate(of_way) if not run.ok]  # fmt: skip
    lines.append("")
    lines.append("Runs that did not succeed: " + (", ".join(failed) if failed else "none") + ".")
    return "\n".join(lines)


# The stack of the operator ways: Airflow's own heartbeats (the e2e stack's 1 s would put
# CPU into the idle rate that a deployment does not spend), and room for a loaded machine.
STACK_SETTINGS = {
    "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "5",
    "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "5",
    "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
}


def launched_stack(tmp: Path, kubeconfig: Path, dag_source: str) -> Any:
    """A real api-server, scheduler (LocalExecutor), dag-processor and triggerer, the
    benchmark's DAGs parsed and its connection set: the documented submitter's kubeconfig."""
    from testenv.airflow_stack import launch_stack

    dags = tmp / "stack-dags"
    dags.mkdir()
    (dags / "bench_whole_app.py").write_text(dag_source)
    stack = launch_stack(tmp / "stack-home", dags, extra_env=STACK_SETTINGS, timeout=600)
    try:
        stack.wait_healthy(timeout=600)
        extra = {"kube_config_path": str(kubeconfig), "namespace": NAMESPACE}
        stack.put_connection("spark_k8s_default", "spark_k8s", extra=json.dumps(extra))
        with stack.client() as client:
            for dag_id in OPERATOR_WAYS.values():
                stack.wait_dag(client, dag_id, timeout=600)
            warm_up(stack, client)
    except BaseException:
        stack.stop()
        raise
    return stack


def warm_up(stack: Any, client: Any) -> None:
    """One run of each operator DAG, not measured: the LocalExecutor starts its workers at its
    first task (all `parallelism` of them at once, forked), and the triggerer imports our
    trigger's code at its first trigger, which a running deployment has already paid. Without
    it the first measured operator run carries them (in a one-round smoke, the deferred run,
    first, grew the groups' PSS by 244 MiB)."""
    from testenv.airflow_stack import StackError

    for dag_id in OPERATOR_WAYS.values():
        try:
            state = stack.wait_run(client, dag_id, stack.trigger(client, dag_id), RUN_TIMEOUT_S)
        except StackError as error:
            print(f"warm-up run of {dag_id}: {error}", flush=True)
            continue
        if state["state"] != "success":
            print(f"warm-up run of {dag_id} ended {state['state']}", flush=True)


def measure(rounds: int, idle_s: float = IDLE_S) -> list[Run]:
    from benchmarks.bench_real_node import real_node_plane
    from testenv.harness.oracle import oracle_environment, spark_submit_path
    from testenv.rbac import DRIVER_SERVICE_ACCOUNT
    from testenv.real_spark import PI, SUBMIT
    from testenv.runtime_image import IMAGE_NAME
    from testenv.spark_plane import open_namespace

    repo = Path(__file__).resolve().parents[1]
    runs: list[Run] = []
    with real_node_plane() as (plane, _), tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        kubeconfig = open_namespace(plane, NAMESPACE, tmp / "kubeconfig")
        conf = spark_conf(IMAGE_NAME, DRIVER_SERVICE_ACCOUNT)
        oracle = oracle_environment(SPARK_LINE, {"KUBECONFIG": str(kubeconfig)}, tmp)
        oracle.pop("SPARK_SUBMIT_OPTS", None)  # the parity suite's start-up tweak, not theirs
        ours = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(tmp),
                "PYTHONPATH": str(repo)}  # fmt: skip
        commands: dict[str, tuple[list[str], Mapping[str, str]]] = {
            WAYS[0]: (
                cli_argv(str(spark_submit_path(SPARK_LINE)), plane.server, "pi-jvm", conf, PI),
                oracle,
            ),
            WAYS[1]: (cli_argv(str(SUBMIT), plane.server, "pi-cli", conf, PI), ours),
        }
        stack = launched_stack(tmp, kubeconfig, dag_file(IMAGE_NAME, DRIVER_SERVICE_ACCOUNT, PI))
        try:
            for index in range(rounds):
                for way in order(index):
                    if way in OPERATOR_WAYS:
                        run = run_in_stack(way, stack, OPERATOR_WAYS[way], idle_s)
                        runs.append(reported(run, run.ok, stack.log_file("triggerer")))
                        continue
                    argv, env = commands[way]
                    log = tmp / f"round{index}-{way.split()[0]}.log"
                    runs.append(reported(run_child(way, argv, env, log), True, log))
        finally:
            stack.stop()
    return runs


# Airflow's own part of a task run by `airflow dags test` (the earlier sittings' third way),
# with no Spark and no cluster: `airflow dags test` of a one-task DAG whose task does nothing,
# and of one whose task defers once (Airflow's own TimeDeltaSensor, deferrable, 1 s) and
# resumes: the same process's start, DAG parse, SQLite and (for the second) the in-process
# trigger, without our operator's code.
FLOORS = {
    "airflow dags test, no-op task": (
        "bench_floor_noop",
        "PythonOperator(task_id='noop', python_callable=lambda: None)",
    ),
    "airflow dags test, task deferred 1 s": (
        "bench_floor_defer",
        "TimeDeltaSensor(task_id='wait', delta=datetime.timedelta(seconds=1), deferrable=True)",
    ),
}
FLOOR_DAG = """import datetime

from airflow.providers.standard.operators.python import PythonOperator
from airflow.providers.standard.sensors.time_delta import TimeDeltaSensor
from airflow.sdk import DAG

with DAG("{dag_id}", schedule=None, catchup=False, start_date=datetime.datetime(2026, 1, 1)):
    {task}
"""


def measure_floors(rounds: int) -> list[Run]:
    repo = Path(__file__).resolve().parents[1]
    airflow = Path(sys.executable).with_name("airflow")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        home, dags = tmp / "airflow", tmp / "dags"
        home.mkdir()
        dags.mkdir()
        for dag_id, task in FLOORS.values():
            (dags / f"{dag_id}.py").write_text(FLOOR_DAG.format(dag_id=dag_id, task=task))
        env = airflow_env(home, dags, tmp / "no-kubeconfig", repo)
        subprocess.run([str(airflow), "db", "migrate"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        for index in range(rounds):
            for way, (dag_id, _) in FLOORS.items():
                log = tmp / f"round{index}-{dag_id}.log"
                run = run_child(way, [str(airflow), "dags", "test", dag_id], env, log)
                runs.append(reported(run, last_run_state(home, dag_id) == "success", log))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_whole_app")
    parser.add_argument("--rounds", type=int, default=2, help="each way once a round (2)")
    parser.add_argument(
        "--airflow-floors",
        action="store_true",
        help="instead, only Airflow's own part: airflow dags test of a no-op task and of a "
        "task deferred 1 s (FLOORS), no Spark and no cluster, --rounds times each",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=IDLE_S,
        help=f"the idle window before each operator run, s ({IDLE_S:g}): the stack's idle "
        "CPU rate, subtracted over the run's wall",
    )
    arguments = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if arguments.airflow_floors:
        runs = measure_floors(arguments.rounds)
        print(f"\nstarted {started}, ended {time.strftime('%H:%M UTC', time.gmtime())}")
        print(table(runs, tuple(FLOORS)))
        return
    runs = measure(arguments.rounds, arguments.idle)
    print(f"\nstarted {started}, ended {time.strftime('%H:%M UTC', time.gmtime())}")
    print(table(runs))


if __name__ == "__main__":
    main()
