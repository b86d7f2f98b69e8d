"""Submission speed: `sparkk8s-submit` against real `spark-submit` 4.3.0, and in-process
submissions per second against the real control plane.

Part 1 runs both tools as child processes with the same arguments against the same
recording endpoint (testenv/harness/recorder.py), alternating, and reads wall time, CPU
(user + system) and peak RSS from the child's rusage. In the same rounds it splits
sparkk8s-submit's wall into interpreter, imports, render and requests
(benchmarks/cli_phases.py) and times the interpreter's floor (`python -c pass`, and
`python -S -c pass` without `site`). Part 2 renders and submits in this
process (no child, no JVM), sequentially and from a thread pool, against two fresh control
planes: kube-apiserver + etcd alone, and the whole plane; it also reads how much CPU each
process spent per submission.

    python -m benchmarks.bench_submit [--runs 5] [--cli-runs 4] [--sequential 100]
        [--concurrent 200] [--checkout DIR] [--baseline DIR]

Prints a Markdown table (docs/benchmarks.md's `## Benchmarks` section holds the last one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.submit.send import submit
from airflow_provider_sparkk8s.submission import naming, render
from airflow_provider_sparkk8s.submission.conf import LocalInputs, MainAppResource
from testenv.harness.oracle import oracle_environment, spark_submit_path
from testenv.harness.recorder import RecordingServer

SPARK_LINE = "4.3.0"
CHECKOUT = Path(__file__).resolve().parent.parent
PHASES = ("interpreter", "imports", "render", "requests")
APP = [
    "--name", "spark-pi", "--class", "org.apache.spark.examples.SparkPi",
    "--conf", "spark.kubernetes.container.image=apache/spark:4.0.0",
    "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
    "local:///opt/spark/examples/jars/spark-examples.jar", "100",
]  # fmt: skip


# Where the in-process submissions go. The API server alone is what a submission talks
# to; the whole plane adds the scheduler, controller manager and KWOK acting on every new
# pod and service on the same 2 cores, which is the cluster's work, not the submission's.
PLANES = {
    "kube-apiserver + etcd": True,
    "whole plane (+ scheduler, controllers, KWOK)": False,
}


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    cpu: float  # seconds, user + system of the child and its children
    rss_mib: float  # peak resident set of the child (largest of its process tree)


def run_child(argv: list[str], env: dict[str, str]) -> Sample:
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({process.returncode}): {stderr[-2000:]!r}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def installed_cli(home: Path) -> tuple[str, str]:
    """An interpreter and a `sparkk8s-submit` console script as an installed package has them.

    The checkout's own venv holds the package as an editable install, whose import hook
    (a .pth file that loads a finder and pathlib at every start) no installed wheel has.
    So the runs use a venv of their own with nothing in site-packages, the tree on
    PYTHONPATH (as a wheel's files on sys.path), and the script pip writes for an entry
    point.
    """
    venv = home / "cli-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    script = venv / "bin" / "sparkk8s-submit"
    script.write_text(
        f"#!{python}\nimport sys\nfrom airflow_provider_sparkk8s.cli.submit import main\n"
        "if __name__ == '__main__':\n    sys.exit(main())\n"
    )
    script.chmod(0o755)
    return python, str(script)


def run_phases(
    python: str, argv: list[str], env: dict[str, str], modules: Path
) -> dict[str, float]:
    """One sparkk8s-submit run split into PHASES (seconds), plus its wall as `total`."""
    script = str(CHECKOUT / "benchmarks" / "cli_phases.py")
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        spawn_ns = time.monotonic_ns()  # the child's first clock read is on the same clock
        wall = run_child([python, script, "time", str(spawn_ns), str(modules),
                          out.name, *argv], env).wall  # fmt: skip
        phases = {name: ns / 1e9 for name, ns in json.loads(Path(out.name).read_text()).items()}
    return phases | {"total": wall}


BASELINE = "baseline"  # the samples of --baseline's tree carry this prefix


def compare_with_spark_submit(
    runs: int, cli_runs: int, checkout: Path, baseline: Path | None = None
) -> dict[str, list]:
    """Each round: spark-submit once, then sparkk8s-submit, its phase split (and the same
    two for `baseline`'s tree) and the interpreter's floor, `cli_runs` times each,
    interleaved (ours are short)."""
    theirs = str(spark_submit_path(SPARK_LINE))
    trees = {"": checkout, **({f"{BASELINE} ": baseline} if baseline else {})}
    samples: dict[str, list] = {"spark-submit 4.3.0": [], "python -c pass": [],
                                "python -S -c pass": []}  # fmt: skip
    samples |= {f"{prefix}{name}": [] for prefix in trees for name in ("sparkk8s-submit", "phases")}
    script = str(CHECKOUT / "benchmarks" / "cli_phases.py")
    with tempfile.TemporaryDirectory() as home, RecordingServer() as server:
        python, ours = installed_cli(Path(home))
        master = ["--master", f"k8s://{server.url}", "--deploy-mode", "cluster"]
        env = oracle_environment(SPARK_LINE, {"SPARK_USER": "bench"}, Path(home))
        env.pop("SPARK_SUBMIT_OPTS", None)  # the oracle's start-up tweak is not spark-submit
        envs: dict[str, dict[str, str]] = {}
        modules: dict[str, Path] = {}
        for prefix, tree in trees.items():
            envs[prefix] = env | {"PYTHONPATH": str(tree)}  # on sys.path, as an install
            modules[prefix] = Path(home) / f"modules-{len(modules)}.txt"  # for the phase split
            run_child([python, script, "list", str(modules[prefix]), *master, *APP],
                      envs[prefix])  # fmt: skip
        for _ in range(runs):  # alternate, so drift on a shared machine hits both alike
            samples["spark-submit 4.3.0"].append(run_child([theirs, *master, *APP], env))
            for _ in range(cli_runs):
                for prefix in trees:
                    samples[f"{prefix}sparkk8s-submit"].append(
                        run_child([ours, *master, *APP], envs[prefix])
                    )
                    samples[f"{prefix}phases"].append(
                        run_phases(python, [*master, *APP], envs[prefix], modules[prefix])
                    )
                samples["python -c pass"].append(run_child([python, "-c", "pass"], env))
                samples["python -S -c pass"].append(run_child([python, "-S", "-c", "pass"], env))
        posts = [r for r in server.recording.as_list() if r["method"] == "POST"]
        expected = len(trees) * (1 + 2 * runs * cli_runs) + runs
        assert len(posts) == expected, "every run must create a driver"
    return samples


def _settings(plane) -> ClientSettings:  # type: ignore[no-untyped-def]
    return ClientSettings(
        server=plane.server,
        ca_file=str(plane.ca_file),
        client_cert_file=str(plane.admin_cert_file),
        client_key_file=str(plane.admin_key_file),
    )


def one_submission(client: KubeClient, namespace: str) -> None:
    conf = render.prepare(
        {
            "spark.master": "k8s://https://127.0.0.1",
            "spark.app.name": "bench",
            "spark.kubernetes.namespace": namespace,
            "spark.kubernetes.container.image": "apache/spark:4.0.0",
            "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
        },
        main_app_resource=MainAppResource("java", "local:///opt/app.jar"),
        main_class="org.apache.spark.examples.SparkPi",
        local=LocalInputs(spark_user="bench"),
        ids=naming.new_submission_ids(),
    )
    submit(client, render.render(conf))


def _process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _plane_cpu(plane) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {name: _process_cpu_seconds(pid) for name, pid in plane.pids().items() if pid}


def _prepare_namespace(client: KubeClient, namespace: str, api_only: bool) -> None:
    client.request("POST", "/api/v1/namespaces", json={"metadata": {"name": namespace}})
    if api_only:  # no controller manager to create the default service account
        client.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            json={"metadata": {"name": "default"}},
        )
        return
    deadline = time.monotonic() + 60
    while not client.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        params={"fieldSelector": "metadata.name=default"},
    ).get("items"):
        if time.monotonic() > deadline:
            raise RuntimeError("default service account never appeared")
        time.sleep(0.1)


def submissions_per_second(
    sequential: int, concurrent: int, workers: int, api_only: bool
) -> dict[str, float]:
    """Rates against one fresh control plane, and the CPU each process spent per submission
    over both runs (ours: render + client, in this process)."""
    from testenv.controlplane import ControlPlane

    with ControlPlane(api_only=api_only) as plane, KubeClient(_settings(plane)) as client:
        namespace = "bench"
        _prepare_namespace(client, namespace, api_only)
        one_submission(client, namespace)  # warm the connection pool and imports
        time.sleep(1)  # let the plane settle after the first pod
        cpu_before, ours_before = _plane_cpu(plane), time.process_time()
        start = time.perf_counter()
        for _ in range(sequential):
            one_submission(client, namespace)
        seq_rate = sequential / (time.perf_counter() - start)
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            for future in [pool.submit(one_submission, client, namespace)
                           for _ in range(concurrent)]:  # fmt: skip
                future.result()
        conc_rate = concurrent / (time.perf_counter() - start)
        ours = time.process_time() - ours_before
        time.sleep(2)  # the plane's reaction to the last pods counts too
        cpu_after = _plane_cpu(plane)
    total = sequential + concurrent
    rates = {"sequential": seq_rate, f"concurrent ({workers} threads)": conc_rate}
    cpu_ms = {"sparkk8s (this process)": ours / total * 1000}
    cpu_ms |= {name: (cpu_after[name] - cpu_before[name]) / total * 1000 for name in cpu_after}
    return rates | {f"CPU ms per submission: {name}": ms for name, ms in cpu_ms.items()}


def median(values: list[Sample], attr: str) -> float:
    return statistics.median(getattr(s, attr) for s in values)


def _split(samples: dict[str, list], prefix: str) -> dict[str, float]:
    """Median ms of each phase, the rest (exit), the split run's and the console script's
    wall, for one tree's samples."""
    split = samples[f"{prefix}phases"]
    cells = {name: statistics.median(p[name] for p in split) for name in PHASES}
    cells["exit"] = statistics.median(p["total"] - sum(p[n] for n in PHASES) for p in split)
    cells["split wall"] = statistics.median(p["total"] for p in split)
    cells["wall"] = median(samples[f"{prefix}sparkk8s-submit"], "wall")
    cells["cpu"] = median(samples[f"{prefix}sparkk8s-submit"], "cpu")  # steadier under load
    return {name: value * 1000 for name, value in cells.items()}


ROW_LABELS = {
    **{name: name for name in PHASES},
    "exit": "exit (the rest: flushing and ending the process)",
    "split wall": "wall of the split run (sum of the above)",
    "wall": "`sparkk8s-submit` (console script) wall",
    "cpu": "`sparkk8s-submit` (console script) CPU, user + system",
}


def phase_table(samples: dict[str, list]) -> list[str]:
    """sparkk8s-submit's wall split (and the baseline's, if one ran), beside spark-submit's
    wall in the same rounds."""
    theirs = median(samples["spark-submit 4.3.0"], "wall") * 1000
    columns = {"": "this checkout"}
    if f"{BASELINE} phases" in samples:
        columns = {f"{BASELINE} ": "baseline (--baseline)", **columns}
    splits = {prefix: _split(samples, prefix) for prefix in columns}
    runs = len(samples["phases"])
    rows = [
        f"| sparkk8s-submit, ms (median of {runs}) | " + " | ".join(columns.values()) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for key, label in ROW_LABELS.items():
        rows.append(f"| {label} | " + " | ".join(f"{splits[p][key]:.1f}" for p in columns) + " |")
    ratios = " | ".join(f"{theirs / splits[p]['wall']:.1f}x" for p in columns)
    rows.append(
        f"| spark-submit 4.3.0 wall in the same rounds: {theirs:.0f} ms; ratio | {ratios} |"
    )
    for floor in ("python -c pass", "python -S -c pass"):
        cell = f"{median(samples[floor], 'wall') * 1000:.1f}"
        rows.append(f"| floor: `{floor}` | " + " | ".join(cell for _ in columns) + " |")
    return [*rows, ""]


def table(samples: dict[str, list], rates: dict[str, dict[str, float]]) -> str:
    rows = []
    if samples:
        theirs, ours = samples["spark-submit 4.3.0"], samples["sparkk8s-submit"]
        rows += [
            (
                f"| per submission (median of {len(theirs)} and {len(ours)}) "
                "| spark-submit 4.3.0 | sparkk8s-submit | ratio |"
            ),
            "| --- | ---: | ---: | ---: |",
        ]
        for label, attr, unit, digits in (("wall", "wall", "s", 3), ("CPU", "cpu", "s", 3),
                                          ("peak RSS", "rss_mib", "MiB", 1)):  # fmt: skip
            a, b = median(theirs, attr), median(ours, attr)
            rows.append(
                f"| {label} | {a:.{digits}f} {unit} | {b:.{digits}f} {unit} | {a / b:.1f}x |"
            )
        rows.append("")
        rows += phase_table(samples)
    if rates:
        planes = list(rates)
        rows.append("| in-process submissions | " + " | ".join(planes) + " |")
        rows.append("| --- |" + " ---: |" * len(planes))
        labels = list(dict.fromkeys(label for plane in planes for label in rates[plane]))
        for label in labels:
            unit = "" if label.startswith("CPU") else "/s"
            cells = " | ".join(
                f"{rates[plane][label]:.1f}{unit}" if label in rates[plane] else "not running"
                for plane in planes
            )
            rows.append(f"| {label} | {cells} |")
        rows.append("")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    rows.append(f"{os.cpu_count()} CPUs, load average at the end: {load}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="spark-submit runs")
    parser.add_argument("--cli-runs", type=int, default=4, help="sparkk8s-submit runs per round")
    parser.add_argument("--sequential", type=int, default=100)
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--only", choices=("compare", "rate"), help="run one part")
    parser.add_argument(
        "--checkout",
        type=Path,
        default=CHECKOUT,
        help="whose sparkk8s-submit part 1 runs (another commit's tree, to compare)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another tree whose sparkk8s-submit runs in the same rounds, for before/after "
        "(e.g. git archive <commit> airflow_provider_sparkk8s | tar -x -C DIR)",
    )
    args = parser.parse_args(argv)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average at the start: {load}", flush=True)
    samples = (
        compare_with_spark_submit(args.runs, args.cli_runs, args.checkout, args.baseline)
        if args.only != "rate"
        else {}
    )
    rates = {}
    if args.only != "compare":
        for label, api_only in PLANES.items():
            rates[label] = submissions_per_second(
                args.sequential, args.concurrent, args.workers, api_only
            )
    print(table(samples, rates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
