"""The whole application, waiting, three ways (issue 28, item 2): `python -m
benchmarks.bench_whole_app [--rounds 2]`.

The same PySpark Pi (`pi.py 4 200000`, a 512m driver and two 512m executors, 200m cores a
pod) on the real node (testenv/realnode: the kubelet, containerd and runc), as the
documented submitter (docs/rbac.yaml), each way waiting for the application's end:
- `spark-submit` 4.3.0 in cluster mode with `waitAppCompletion=true` (its default), as
  SparkSubmitOperator runs it: a JVM on the Airflow side for the application's whole life;
- `sparkk8s-submit`, which waits too;
- the operator (`SparkK8sSubmitOperator`, deferrable) through `airflow dags test`, which runs
  the task and then its trigger in one process: what the Airflow side holds while one
  application runs, Airflow's own machinery included (a real triggerer shares that among
  its triggers; bench_real_triggerer measures the per-task part).

Each round runs the three in turn, the order rotated a round. Each is a child process read
through wait4 from a small launcher (see LAUNCHER): wall time, CPU (user + system, its
reaped children included) and peak RSS (the largest of the process and its children). A
run is killed after RUN_TIMEOUT_S and counted as failed. The metadata database of `airflow
dags test` (SQLite) is migrated once before the rounds, not timed. The 1-minute load is
noted at each run's start and end. Nothing is asserted: the table goes into
docs/benchmarks.md by hand.
`--airflow-floors` measures instead Airflow's own part of the third way (FLOORS), no Spark.
"""

from __future__ import annotations

import argparse
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

NAMESPACE = "bench-whole"
DAG_ID = "bench_whole_app"
SPARK_LINE = "4.3.0"
WAYS = ("spark-submit 4.3.0", "sparkk8s-submit", "operator via airflow dags test")
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


DAG_FILE = '''"""One deferrable PySpark Pi (bench_whole_app)."""
import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

with DAG("{dag_id}", schedule=None, catchup=False, start_date=datetime.datetime(2026, 1, 1)):
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
        deferrable=True,
        startup_timeout=300,
        run_timeout=1800,
    )
'''


def dag_file(image: str, service_account: str, pi: str) -> str:
    return DAG_FILE.format(
        dag_id=DAG_ID,
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
        run = Run(run.way, run.wall_s, run.cpu_s, run.peak_rss_mib, False, run.load)
    if not run.ok:
        print(f"{run.way} failed; its log's end:\n{log.read_text()[-3000:]}", flush=True)
    print(json.dumps(vars(run)), file=sys.stderr, flush=True)
    return run


def last_run_state(home: Path, dag_id: str = DAG_ID) -> str:
    """The state `airflow dags test` left its last run of dag_id in (its exit code alone
    does not say the task succeeded)."""
    with sqlite3.connect(home / "airflow.db") as db:
        row = db.execute(
            "SELECT state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
        ).fetchone()
    return str(row[0]) if row else "no run"


def order(round_index: int) -> list[str]:
    """The three ways, rotated a round, so none always runs first on a fresh node."""
    shift = round_index % len(WAYS)
    return [*WAYS[shift:], *WAYS[:shift]]


def cell(runs: list[Run], figure: str, unit: str, digits: int) -> str:
    """Each run's figure in order, a failed one marked and left out of the median."""
    shown = ", ".join(
        f"{getattr(run, figure):.{digits}f}" + ("" if run.ok else " (failed)") for run in runs
    )
    values = [getattr(run, figure) for run in runs if run.ok]
    if len(values) > 1:
        shown += f" (median {statistics.median(values):.{digits}f})"
    return f"{shown} {unit}"


def table(runs: list[Run], ways: tuple[str, ...] = WAYS) -> str:
    by_way = {way: [run for run in runs if run.way == way] for way in ways}
    lines = [
        "| waiting on one application | " + " | ".join(ways) + " |",
        "| --- |" + " ---: |" * len(ways),
    ]
    rows = (
        ("wall to the end", "wall_s", "s", 1),
        ("CPU of the submitting side, user + system", "cpu_s", "s", 2),
        ("peak RSS of the submitting side", "peak_rss_mib", "MiB", 1),
    )
    for label, figure, unit, digits in rows:
        cells = [cell(by_way[way], figure, unit, digits) for way in ways]
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


def measure(rounds: int) -> list[Run]:
    from benchmarks.bench_real_node import real_node_plane
    from testenv.harness.oracle import oracle_environment, spark_submit_path
    from testenv.rbac import DRIVER_SERVICE_ACCOUNT
    from testenv.real_spark import PI, SUBMIT
    from testenv.runtime_image import IMAGE_NAME
    from testenv.spark_plane import open_namespace

    repo = Path(__file__).resolve().parents[1]
    airflow = Path(sys.executable).with_name("airflow")
    runs: list[Run] = []
    with real_node_plane() as (plane, _), tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        kubeconfig = open_namespace(plane, NAMESPACE, tmp / "kubeconfig")
        conf = spark_conf(IMAGE_NAME, DRIVER_SERVICE_ACCOUNT)
        home, dags = tmp / "airflow", tmp / "dags"
        home.mkdir()
        dags.mkdir()
        (dags / "bench_whole_app.py").write_text(dag_file(IMAGE_NAME, DRIVER_SERVICE_ACCOUNT, PI))
        env_airflow = airflow_env(home, dags, kubeconfig, repo)
        subprocess.run([str(airflow), "db", "migrate"], env=env_airflow, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
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
            WAYS[2]: ([str(airflow), "dags", "test", DAG_ID], env_airflow),
        }
        for index in range(rounds):
            for way in order(index):
                argv, env = commands[way]
                log = tmp / f"round{index}-{way.split()[0]}.log"
                run = run_child(way, argv, env, log)
                dag_ok = way != WAYS[2] or last_run_state(home) == "success"
                runs.append(reported(run, dag_ok, log))
    return runs


# Airflow's own part of the third way, with no Spark and no cluster: `airflow dags test` of a
# one-task DAG whose task does nothing, and of one whose task defers once (Airflow's own
# TimeDeltaSensor, deferrable, 1 s) and resumes: the same process's start, DAG parse, SQLite
# and (for the second) the in-process trigger, without our operator's code.
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
    arguments = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if arguments.airflow_floors:
        runs = measure_floors(arguments.rounds)
        print(f"\nstarted {started}, ended {time.strftime('%H:%M UTC', time.gmtime())}")
        print(table(runs, tuple(FLOORS)))
        return
    runs = measure(arguments.rounds)
    print(f"\nstarted {started}, ended {time.strftime('%H:%M UTC', time.gmtime())}")
    print(table(runs))


if __name__ == "__main__":
    main()
