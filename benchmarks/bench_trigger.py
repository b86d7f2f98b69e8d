"""Many deferred Spark applications in one event loop: SparkK8sApplicationTrigger (one shared
watch + periodic list) against KubernetesPodTrigger (one poll loop per pod), side by side.

For each peer, on a fresh namespace of the real control plane (kube-apiserver, etcd,
scheduler, controllers; KWOK as the kubelet):

1. create N driver pods that KWOK schedules, starts and holds Running;
2. start a child process that runs N triggers in one asyncio loop, as the triggerer does,
   and says READY once every trigger has been running for the warm-up;
3. end the pods at a steady pace by writing each pod's terminal status through the status
   subresource, the way a kubelet does (every third one fails with exit code 1), noting the
   wall-clock time just before each write;
4. the child records when each trigger fired; the delay is fired - written.

API requests come from kube-apiserver's `/metrics` (`apiserver_request_total`), read before
the child starts and after it exits: read requests (GET, LIST, WATCH) on pods and events,
the only ones either trigger makes; the status writes are PATCHes and are not counted. CPU
(user + system) and peak RSS come from the child's rusage; memory per application is the
child's RSS growth from before the triggers were created to the moment all were tracked,
both read after a garbage collection and `malloc_trim` (what stays, not a parse's peak).

    python -m benchmarks.bench_trigger [--apps 1000] [--peers ours,kpt] [--write-seconds 20]
    python -m benchmarks.bench_trigger --scale 1000,3000,10000 --executors-at 3000 --kpt-apps 200 \
        --changes-per-second 50 --deadline 900

`--scale` runs ours alone at each size (one fresh control plane per size), then the peer at
`--kpt-apps` (the largest N it can follow) beside ours at the same N, and prints the scale
table: RSS per tracked application, p50/p99 change -> event, the loop's CPU per status
change (CPU from READY to the last event, divided by the status writes; the garbage
collector's share beside it, from gc.callbacks), read requests, and
the CPU of each process over the tracking window (the triggerer child from its rusage,
kube-apiserver, etcd, KWOK, scheduler and controller manager from /proc). `--executors-at N`
gives every application two executor pods (Running, held) in the N run: the store follows
them too.

`--metrics-pair` runs two children of ours at once on the same pods (one plane, one set of
status writes, the same load): one with Airflow's `[metrics]` off, one with StatsD on, sending
to a real statsd_exporter (testenv/build_statsd_exporter.sh), and prints the loop CPU of
metrics on / off, and how many application durations the exporter counted:

    python -m benchmarks.bench_trigger --metrics-pair --apps 10000 --changes-per-second 100

`--pairs N` makes N such runs, each on a fresh control plane, alternating which child starts
first, and prints the median change. `--clock-metrics` also clocks the metrics path inside
each child's own loop (benchmarks/harness/metrics_clock.py): its share of that child's CPU,
which the machine's load does not skew as it skews two processes against each other.

KubernetesPodTrigger comes from apache-airflow-providers-cncf-kubernetes: from the venv if
installed there, else installed once beside it (`benchmarks/harness/peer_provider.py`, pip
--target without its pins: it wants kubernetes<37, the tests need 37).

Prints a Markdown table (docs/benchmarks.md's `## Benchmarks` section holds the last one).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.harness.peer_provider import peer_site, with_peer_on_path

DRIVER_CONTAINER = "spark-kubernetes-driver"
SPARK_CONN = "spark_k8s_bench"
KPT_CONN = "kubernetes_bench"
READ_VERBS = ("GET", "LIST", "WATCH")
COUNTED_RESOURCES = ("pods", "events")
PEER_NAMES = {
    "ours": "SparkK8sApplicationTrigger",
    "ours-metrics": "SparkK8sApplicationTrigger, metrics on",
    "ours-metrics-base": "SparkK8sApplicationTrigger, metrics on, --baseline-tree",
    "kpt": "KubernetesPodTrigger",
}
OURS = ("ours", "ours-metrics")
# Metrics on: this tree's code, and with --baseline-tree another tree's (its own child code).
METRICS_ON = ("ours-metrics", "ours-metrics-base")


# --------------------------------------------------------------------------- pure helpers


def read_requests(metrics_text: str) -> tuple[int, int]:
    """(read requests on pods and events, all requests) from a /metrics scrape."""
    counted = total = 0
    for line in metrics_text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        value = int(float(line.rsplit(" ", 1)[1]))
        total += value
        if labels.get("verb") in READ_VERBS and labels.get("resource") in COUNTED_RESOURCES:
            counted += value
    return counted, total


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def terminal_status(exit_code: int, now: str) -> dict[str, Any]:
    terminated = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": now,
        "finishedAt": now,
    }
    return {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "containerStatuses": [
            {
                "name": DRIVER_CONTAINER,
                "image": "kwok",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"terminated": terminated},
            }
        ],
    }


# --------------------------------------------------------------------------- the child


def settled_rss_kib() -> int:
    """RSS once garbage is collected and the C allocator has handed freed pages back: what
    the process keeps, not the high-water mark of a list body parsed and dropped."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_kib()


class GcClock:
    """CPU seconds the cyclic garbage collector took (gc.callbacks), to tell its share of the
    loop's CPU per change from the store's own."""

    def __init__(self) -> None:
        self.total = 0.0
        self._started = 0.0
        import gc

        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.total += time.process_time() - self._started


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def make_triggers(peer: str, namespace: str, names: list[str], resync: float) -> list[Any]:
    now = datetime.now(UTC)
    if peer in OURS:
        from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

        triggers = [
            SparkK8sApplicationTrigger(
                application_id=app_id_of(name),
                namespace=namespace,
                kubernetes_conn_id=SPARK_CONN,
                driver_pod_name=name,
                resync_interval=resync,
                stream_logs=False,
                start_time=now.timestamp(),
            )
            for name in names
        ]
        # What the triggerer sets on each trigger it runs (the metrics' dag_id and task_id).
        for index, trigger in enumerate(triggers):
            ti: Any = SimpleNamespace(dag_id="bench", task_id=f"t{index % 100}")
            trigger.task_instance = ti
        return triggers
    from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger

    return [
        KubernetesPodTrigger(
            pod_name=name,
            pod_namespace=namespace,
            trigger_start_time=now,
            base_container_name=DRIVER_CONTAINER,
            kubernetes_conn_id=KPT_CONN,
            get_logs=False,
            on_finish_action="keep_pod",
        )
        for name in names
    ]


def app_id_of(name: str) -> str:
    return "spark-" + name.split("-")[1].rjust(32, "0")


async def run_child(
    peer: str, namespace: str, names: list[str], warmup: float, deadline: float, resync: float
) -> dict[str, Any]:
    make_triggers(peer, namespace, names[:1], resync)  # imports are not per-app memory
    quiet_logs()  # again: importing Airflow configured its logging
    rss_before = settled_rss_kib()
    cpu_before = time.process_time()
    triggers = make_triggers(peer, namespace, names, resync)
    fired: dict[str, float] = {}
    payloads: dict[str, Any] = {}

    async def follow(name: str, trigger: Any) -> None:
        async for event in trigger.run():
            fired[name] = time.time()
            payloads[name] = event.payload.get("status")
            return

    # Only our triggers have stores; the peer's run imports nothing of ours.
    watching = contextlib.ExitStack()
    running: list[Any] = []
    if peer in OURS:
        from testenv.trigger_fleet.running_stores import running_stores

        running = watching.enter_context(running_stores())
    with watching:
        started = time.monotonic()
        tasks = [asyncio.create_task(follow(n, t)) for n, t in zip(names, triggers, strict=True)]
        if peer in OURS:  # tracked = every trigger has seen its driver
            while not all(t.last_state is not None for t in triggers):
                if time.monotonic() - started > deadline:
                    break
                await asyncio.sleep(0.1)
        while time.monotonic() - started < warmup:  # noqa: ASYNC110 - a fixed warm-up period
            await asyncio.sleep(0.1)
        rss_tracking = settled_rss_kib()
        stores = list(running)  # those up once tracked: the last trigger's end stops them
        gc_clock = GcClock()
        cpu_ready = time.process_time()
        print("READY", flush=True)
        end = time.monotonic() + deadline
        while len(fired) < len(names) and time.monotonic() < end:  # noqa: ASYNC110 - deadline
            await asyncio.sleep(0.05)
        stats = {k: v for store in stores for k, v in vars(store.stats).items()}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "store_stats": stats,
        "fired": fired,
        "statuses": payloads,
        "rss_before_kib": rss_before,
        "rss_tracking_kib": rss_tracking,
        "cpu_in_loop": time.process_time() - cpu_before,
        "cpu_after_ready": time.process_time() - cpu_ready,
        "gc_after_ready": gc_clock.total,
        "loop_seconds": time.monotonic() - started,
        "metrics_on": metrics_on(peer),
    }


def metrics_on(peer: str) -> bool:
    """Whether the child's triggers send metrics (Airflow's [metrics] from its environment)."""
    if peer not in OURS:
        return False
    from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics

    return airflow_metrics().enabled


def quiet_logs() -> None:
    """Thousands of state-change lines would measure logging. The triggers log through
    Airflow's structlog, which `logging.disable` does not reach."""
    import logging

    import structlog

    logging.disable(logging.INFO)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def child_main(args: argparse.Namespace) -> None:
    quiet_logs()
    names = json.loads(Path(args.names_file).read_text())
    clocking = contextlib.nullcontext(None)
    if args.clock_metrics:
        from benchmarks.harness.metrics_clock import clocked_metrics

        clocking = clocked_metrics()  # type: ignore[assignment]
    # SPARKK8S_BENCH_PROFILE=PREFIX: cProfile each child's loop into PREFIX.<peer>.prof (its
    # calls cost more under the profiler: it says where the time goes, not how much).
    profile_prefix = os.environ.get("SPARKK8S_BENCH_PROFILE")
    profiler = cProfile.Profile() if profile_prefix else None
    with clocking as clock:
        if profiler is not None:
            profiler.enable()
        result = asyncio.run(
            run_child(args.child, args.namespace, names, args.warmup, args.deadline, args.resync)
        )
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{profile_prefix}.{args.child}.prof")
    if clock is not None:
        result["metrics_clock"] = {
            "seconds": clock.seconds,
            "wrapper_seconds": clock.wrapper_seconds,
            "gc_seconds": clock.gc_seconds,
            "gc_passes": clock.gc_passes,
            "calls": clock.calls,
            "by_name": clock.by_name,
            "inclusive": clock.inclusive,
            "empty_in_loop": clock.empty_in_loop,
            "empty_in_loop_seconds": clock.empty_in_loop_seconds,
            "seconds_in_loop_calibrated": clock.seconds_in_loop_calibrated,
        }
    Path(args.result).write_text(json.dumps(result))


# --------------------------------------------------------------------------- the orchestrator


@dataclass
class PeerResult:
    peer: str
    apps: int
    reported: int
    wrong: int
    requests: int
    all_requests: int
    window: float
    p50: float
    p99: float
    cpu: float
    cpu_loop: float
    rss_peak_mib: float
    per_app_kib: float
    executors: int = 0
    cpu_per_change_ms: float = 0.0
    gc_per_change_ms: float = 0.0
    plane_cpu: dict[str, float] | None = None  # seconds over the tracking window, by process
    load: str = ""
    load_before: str = ""
    metrics_on: bool = False
    durations_scraped: int = 0  # application.duration samples statsd_exporter counted
    metrics_clock: dict[str, Any] | None = None  # --clock-metrics: the metrics path's CPU


def admin_api(plane: Any) -> Any:
    from kubernetes import config as k8s_config

    return k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))


def create_pods(plane: Any, namespace: str, count: int, executors: int = 0) -> list[str]:
    """`count` held drivers (and `executors` held executor pods each), bound to the KWOK
    nodes round-robin: the scheduler would only add its own CPU to the figures."""
    from testenv.harness.kube import request, session
    from testenv.harness.pods import MANUAL, pod_manifest, running_status
    from testenv.harness.waiting import wait_for

    api = admin_api(plane)
    request(api, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    wait_for(lambda: service_account_ready(api, namespace), 60, "default service account")
    names = [f"bench-{index}-driver" for index in range(count)]
    manifests: list[dict[str, Any]] = []
    for index, name in enumerate(names):
        app = app_id_of(name)
        roles = [("driver", name)] + [
            ("executor", f"bench-{index}-exec-{e + 1}") for e in range(executors)
        ]
        for role, pod_name in roles:
            labels = {"spark-app-selector": app, "spark-role": role}
            container = DRIVER_CONTAINER if role == "driver" else "spark-kubernetes-executor"
            # KWOK leaves these pods' status to us: under load it re-applied its Running
            # stage after our terminal writes (a kubelet never does), hiding completions.
            manifest = pod_manifest(
                pod_name, {MANUAL: "true"}, labels, container_names=(container,)
            )
            manifest["spec"]["nodeName"] = plane.node_names[len(manifests) % len(plane.node_names)]
            manifests.append(manifest)
    path = f"/api/v1/namespaces/{namespace}/pods"
    chunks = [manifests[i::8] for i in range(8)]

    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    headers = {"Content-Type": "application/strategic-merge-patch+json"}

    def make(chunk: list[dict[str, Any]]) -> None:
        with session(api, timeout=60) as client:
            for manifest in chunk:
                response = client.post(path, json=manifest)
                if response.status_code != 201:
                    raise RuntimeError(f"creating {manifest['metadata']['name']}: {response.text}")
                containers = tuple(c["name"] for c in manifest["spec"]["containers"])
                body = {"status": running_status(containers, started)}
                name = manifest["metadata"]["name"]
                client.patch(f"{path}/{name}/status", json=body, headers=headers)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, chunks))
    wait_for(lambda: not_running(api, namespace) == 0, 1800, f"{len(manifests)} pods Running")
    return names


def service_account_ready(api: Any, namespace: str) -> bool:
    from testenv.harness.kube import request

    body = request(api, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts")
    return any(item["metadata"]["name"] == "default" for item in body.get("items", []))


def not_running(api: Any, namespace: str) -> int:
    """Pods not Running yet (one page of at most 500; 0 means all are)."""
    from testenv.harness.kube import request

    body = request(
        api,
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        params={"fieldSelector": "status.phase!=Running", "limit": "500"},
    )
    return len(body.get("items", []))


def end_pods(
    plane: Any, namespace: str, names: list[str], seconds: float, first_index: int = 0
) -> dict[str, float]:
    """Terminal statuses over `seconds`; the pod at overall index i (`first_index` + its place
    in `names`) fails with exit code 1 when i % 3 == 0."""
    from testenv.harness.kube import session

    api = admin_api(plane)
    written: dict[str, float] = {}
    start = time.monotonic()
    headers = {"Content-Type": "application/strategic-merge-patch+json"}
    with session(api, timeout=60) as client:
        for index, name in enumerate(names):
            delay = start + index * seconds / len(names) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            failing = (first_index + index) % 3 == 0
            body = {"status": terminal_status(1 if failing else 0, now)}
            written[name] = time.time()
            response = client.patch(
                f"/api/v1/namespaces/{namespace}/pods/{name}/status", json=body, headers=headers
            )
            response.raise_for_status()
    return written


def write_seconds(args: argparse.Namespace, apps: int) -> float:
    """Over how long the statuses are written: a fixed rate when asked, so each size sees
    the same changes per second."""
    return apps / args.changes_per_second if args.changes_per_second else args.write_seconds


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def plane_cpu(plane: Any) -> dict[str, float]:
    return {name: process_cpu_seconds(pid) for name, pid in plane.pids().items() if pid}


def measure(
    plane: Any, peer: str, apps: int, args: argparse.Namespace, workdir: Path, executors: int = 0
) -> PeerResult:
    return measure_together(plane, [peer], apps, args, workdir, executors)[0]


def measure_together(
    plane: Any,
    peers: list[str],
    apps: int,
    args: argparse.Namespace,
    workdir: Path,
    executors: int = 0,
) -> list[PeerResult]:
    """One child per peer, all following the same pods at the same time: the same status
    writes reach each, under the same load (`--metrics-pair`: metrics off and on side by
    side). API requests are then those of all children together."""
    namespace = f"bench-{'-'.join(peers)}-{apps}-{os.getpid()}"
    names = create_pods(plane, namespace, apps, executors)
    names_file = workdir / f"{namespace}-names.json"
    names_file.write_text(json.dumps(names))
    kubeconfig = plane.write_kubeconfig(workdir / f"{namespace}.kubeconfig", namespace)
    env = dict(os.environ)
    env[f"AIRFLOW_CONN_{SPARK_CONN.upper()}"] = json.dumps(
        {"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}
    )
    env[f"AIRFLOW_CONN_{KPT_CONN.upper()}"] = json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    )
    # Metrics on: Airflow's StatsD client, configured as a deployment's [metrics] would be,
    # sends to a real statsd_exporter; off: the deployment has no metrics (the default).
    env["AIRFLOW__METRICS__STATSD_ON"] = "False"
    exporters: dict[str, Any] = {}  # one per metrics child: each counts its own durations
    unread: list[socket.socket] = []  # --statsd-target socket: bound UDP sockets nothing reads
    try:
        children = []
        for peer in peers:
            child_env = dict(env)
            if peer in METRICS_ON:
                if getattr(args, "statsd_target", "exporter") == "socket":
                    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    sock.bind(("127.0.0.1", 0))
                    unread.append(sock)
                    statsd_port = sock.getsockname()[1]
                else:
                    from testenv.statsd_exporter import StatsdExporter

                    exporter_dir = workdir / f"exporter-{peer}"
                    exporter_dir.mkdir()
                    exporters[peer] = StatsdExporter(exporter_dir).start()
                    statsd_port = exporters[peer].udp_port
                child_env["AIRFLOW__METRICS__STATSD_ON"] = "True"
                child_env["AIRFLOW__METRICS__STATSD_HOST"] = "127.0.0.1"
                child_env["AIRFLOW__METRICS__STATSD_PORT"] = str(statsd_port)
                child_env["AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED"] = "True"
            if peer == "ours-metrics-base":  # the other tree's code, its child included
                child_env["PYTHONPATH"] = str(args.baseline_tree)
            children.append((peer, child_env))
        return _measure(
            plane, children, namespace, apps, args, workdir, executors, names, exporters
        )
    finally:
        for exporter in exporters.values():
            exporter.stop()
        for sock in unread:
            sock.close()


class _Child:
    """One child process and the reader of its output."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None):
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True, cwd=cwd)
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        # Read the child's output all along: a full pipe would stall its event loop on a
        # log write and measure the pipe, not the trigger.
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip() == "READY":
                self.ready.set()


def _measure(
    plane: Any,
    children: list[tuple[str, dict[str, str]]],
    namespace: str,
    apps: int,
    args: argparse.Namespace,
    workdir: Path,
    executors: int,
    names: list[str],
    exporters: dict[str, Any],
) -> list[PeerResult]:
    names_file = workdir / f"{namespace}-names.json"
    before, before_all = read_requests(plane.metrics_text())
    cpu_before = plane_cpu(plane)
    load_before = load_average()
    started: list[tuple[str, _Child]] = []
    for peer, env in children:
        argv = [
            sys.executable,
            "-m",
            "benchmarks.bench_trigger",
            "--child",
            "ours-metrics" if peer == "ours-metrics-base" else peer,  # the name its tree knows
            "--namespace",
            namespace,
            "--names-file",
            str(names_file),
            "--result",
            str(workdir / f"{peer}-result.json"),
            "--warmup",
            str(args.warmup),
            "--deadline",
            str(args.deadline),
            "--resync",
            str(args.resync),
            *(["--clock-metrics"] if getattr(args, "clock_metrics", False) else []),
        ]
        # `-m` puts the working directory first on sys.path: the baseline child runs in its tree.
        cwd = str(args.baseline_tree) if peer == "ours-metrics-base" else None
        started.append((peer, _Child(argv, env, cwd)))
    for peer, child in started:
        if not child.ready.wait(args.deadline + args.warmup):
            raise RuntimeError(f"{peer} child never became ready")
    written = end_pods(plane, namespace, names, write_seconds(args, apps))
    usages = {}
    for peer, child in started:
        _, status, usages[peer] = os.wait4(child.process.pid, 0)
        child.reader.join()
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{peer} child failed")
    after, after_all = read_requests(plane.metrics_text())
    cpu_after = plane_cpu(plane)
    durations: dict[str, int] = {}
    if exporters:  # UDP: give the last datagrams a moment to be counted
        time.sleep(1.0)
    for peer, exporter in exporters.items():
        durations[peer] = int(
            sum(
                value
                for (name, _), value in exporter.samples().items()
                if name == "airflow_sparkk8s_application_duration_count"
            )
        )
    results = []
    for peer, _ in started:
        usage = usages[peer]
        result = json.loads((workdir / f"{peer}-result.json").read_text())
        if result.get("store_stats"):
            print(f"{peer} store: {result['store_stats']}", file=sys.stderr, flush=True)
        delays = [result["fired"][n] - written[n] for n in names if n in result["fired"]]
        expected = {n: ("failed" if i % 3 == 0 else "success") for i, n in enumerate(names)}
        wrong = sum(1 for n, s in result["statuses"].items() if s != expected[n])
        grown = result["rss_tracking_kib"] - result["rss_before_kib"]
        results.append(
            PeerResult(
                peer=peer,
                apps=apps,
                reported=len(delays),
                wrong=wrong,
                requests=after - before,
                all_requests=after_all - before_all,
                window=result["loop_seconds"],
                p50=percentile(delays, 0.50),
                p99=percentile(delays, 0.99),
                cpu=usage.ru_utime + usage.ru_stime,
                cpu_loop=result["cpu_in_loop"],
                rss_peak_mib=usage.ru_maxrss / 1024,
                per_app_kib=grown / apps,
                executors=executors,
                cpu_per_change_ms=1000 * result["cpu_after_ready"] / apps,
                gc_per_change_ms=1000 * result.get("gc_after_ready", 0.0) / apps,
                plane_cpu={
                    "triggerer": usage.ru_utime + usage.ru_stime,
                    **{name: cpu_after[name] - cpu_before.get(name, 0.0) for name in cpu_after},
                },
                load=load_average(),
                load_before=load_before,
                metrics_on=bool(result.get("metrics_on")),
                durations_scraped=durations.get(peer, 0),
                metrics_clock=result.get("metrics_clock"),
            )
        )
    return results


def table(results: list[PeerResult]) -> str:
    ours = next((r for r in results if r.peer == "ours"), None)
    peer = next((r for r in results if r.peer == "kpt"), None)
    with_metrics = next((r for r in results if r.peer == "ours-metrics"), None)
    if with_metrics is not None and ours is not None:  # the ratio: metrics on / off
        ours, peer = with_metrics, ours
    rows = [
        ("applications tracked", lambda r: f"{r.apps}", None),
        ("final events (wrong status)", lambda r: f"{r.reported} ({r.wrong})", None),
        (
            "read requests on pods+events",
            lambda r: f"{r.requests}",
            lambda a, b: a.requests / b.requests,
        ),
        (
            "  per second of tracking",
            lambda r: f"{r.requests / r.window:.1f}",
            lambda a, b: (a.requests / a.window) / (b.requests / b.window),
        ),
        ("all API requests (incl. status writes)", lambda r: f"{r.all_requests}", None),
        ("tracking window (s)", lambda r: f"{r.window:.1f}", None),
        ("delay status -> event p50 (s)", lambda r: f"{r.p50:.3f}", lambda a, b: a.p50 / b.p50),
        ("delay status -> event p99 (s)", lambda r: f"{r.p99:.3f}", lambda a, b: a.p99 / b.p99),
        (
            "CPU in the trigger loop (s)",
            lambda r: f"{r.cpu_loop:.1f}",
            lambda a, b: a.cpu_loop / b.cpu_loop,
        ),
        (
            "CPU of the process, incl. imports (s)",
            lambda r: f"{r.cpu:.1f}",
            lambda a, b: a.cpu / b.cpu,
        ),
        (
            "peak RSS (MiB)",
            lambda r: f"{r.rss_peak_mib:.0f}",
            lambda a, b: a.rss_peak_mib / b.rss_peak_mib,
        ),
        (
            "RSS growth per tracked app (KiB)",
            lambda r: f"{r.per_app_kib:.1f}",
            lambda a, b: a.per_app_kib / b.per_app_kib,
        ),
    ]
    names = [PEER_NAMES[r.peer] for r in results]
    lines = [
        "| measure | " + " | ".join(names) + (" | ratio |" if ours and peer else " |"),
        "| --- |" + " --- |" * len(results) + (" --- |" if ours and peer else ""),
    ]
    for label, cell, ratio in rows:
        line = f"| {label} | " + " | ".join(cell(r) for r in results) + " |"
        if ours and peer:
            value = ""
            if ratio is not None:
                try:
                    value = f"{ratio(ours, peer):.4f}"
                except ZeroDivisionError:
                    value = "-"
            line += f" {value} |"
        lines.append(line)
    return "\n".join(lines)


def metrics_line(results: list[PeerResult], peer: str = "ours-metrics") -> str:
    """Metrics on against off, in the same run: what sending them costs the trigger loop."""
    on = next((r for r in results if r.peer == peer), None)
    off = next((r for r in results if r.peer == "ours"), None)
    if on is None or off is None:
        return ""
    assert on.metrics_on and not off.metrics_on, "the metrics switch did not reach the child"
    ratio = on.cpu_loop / off.cpu_loop
    return (
        f"\n{PEER_NAMES[peer]} / off, CPU in the trigger loop: {on.cpu_loop:.2f} s / "
        f"{off.cpu_loop:.2f} s"
        f" = {ratio:.4f} ({100 * (ratio - 1):+.1f} %); statsd_exporter counted "
        f"{on.durations_scraped} application durations of {on.apps} (0: --statsd-target socket)"
        f"; the garbage collector after READY: off {off.gc_per_change_ms * off.apps / 1000:.2f} s"
        f", on {on.gc_per_change_ms * on.apps / 1000:.2f} s"
    )


def require_peer() -> None:
    """KubernetesPodTrigger importable here and in the children: from the venv if installed
    there, else from the folder beside it (`benchmarks.harness.peer_provider`)."""
    try:
        import airflow.providers.cncf.kubernetes.triggers.pod  # noqa: F401
    except ImportError:
        os.environ["PYTHONPATH"] = with_peer_on_path(os.environ.get("PYTHONPATH"))
        sys.path.append(str(peer_site()))


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def scale_table(ours: list[PeerResult], peer: PeerResult | None, same_n: PeerResult | None) -> str:
    """One column per run: ours at each N, then the peer and ours at the peer's N."""
    runs = [("SparkK8sApplicationTrigger", r) for r in ours]
    if peer is not None and same_n is not None:
        runs += [("KubernetesPodTrigger", peer), ("SparkK8sApplicationTrigger", same_n)]
    processes = ["triggerer", "kube-apiserver", "etcd", "kwok", "kube-scheduler"]
    processes.append("kube-controller-manager")
    rows: list[tuple[str, Any]] = [
        ("applications (executor pods each)", lambda r: f"{r.apps} ({r.executors})"),
        ("final events (wrong status)", lambda r: f"{r.reported} ({r.wrong})"),
        ("RSS growth per tracked app (KiB)", lambda r: f"{r.per_app_kib:.1f}"),
        ("  per tracked pod (KiB)", lambda r: f"{r.per_app_kib / (1 + r.executors):.1f}"),
        ("peak RSS (MiB)", lambda r: f"{r.rss_peak_mib:.0f}"),
        ("delay change -> event p50 (s)", lambda r: f"{r.p50:.3f}"),
        ("delay change -> event p99 (s)", lambda r: f"{r.p99:.3f}"),
        ("loop CPU per status change (ms)", lambda r: f"{r.cpu_per_change_ms:.2f}"),
        ("  of which the garbage collector (ms)", lambda r: f"{r.gc_per_change_ms:.2f}"),
        ("read requests on pods+events", lambda r: f"{r.requests}"),
        ("  per minute of tracking", lambda r: f"{60 * r.requests / r.window:.1f}"),
        *[
            (
                f"CPU s over the window: {name}",
                lambda r, n=name: f"{(r.plane_cpu or {}).get(n, 0):.1f}",
            )
            for name in processes
        ],
        ("tracking window (s)", lambda r: f"{r.window:.1f}"),
        ("load average at the end", lambda r: r.load),
    ]
    lines = [
        "| measure | " + " | ".join(f"{name} {r.apps}" for name, r in runs) + " |",
        "| --- |" + " ---: |" * len(runs),
    ]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(r) for _, r in runs) + " |")
    if peer is not None and same_n is not None:
        ratios = {
            "p99": same_n.p99 / peer.p99,
            "loop CPU": same_n.cpu_loop / peer.cpu_loop,
            "RSS per app": same_n.per_app_kib / peer.per_app_kib,
            "read requests": same_n.requests / max(peer.requests, 1),
        }
        text = ", ".join(f"{k} {v:.3f}" for k, v in ratios.items())
        lines.append(f"\nAt N={peer.apps}, ours / KubernetesPodTrigger: {text}")
    return "\n".join(lines)


def run_scale(args: argparse.Namespace) -> None:
    from testenv.controlplane import ControlPlane

    sizes = [int(n) for n in args.scale.split(",")]
    ours: list[PeerResult] = []
    peer = same_n = None
    with tempfile.TemporaryDirectory() as tmp:
        for apps in sizes:
            executors = 2 if apps == args.executors_at else 0
            pods = apps * (1 + executors)
            with ControlPlane(node_count=max(3, math.ceil(pods / 200) + 1)) as plane:
                ours.append(measure(plane, "ours", apps, args, Path(tmp), executors))
            print(f"ours {apps}: {ours[-1]}", file=sys.stderr, flush=True)
        if args.kpt_apps:
            with ControlPlane(node_count=max(3, math.ceil(args.kpt_apps / 200) + 1)) as plane:
                peer = measure(plane, "kpt", args.kpt_apps, args, Path(tmp))
                same_n = measure(plane, "ours", args.kpt_apps, args, Path(tmp))
            print(f"kpt {args.kpt_apps}: {peer}", file=sys.stderr, flush=True)
    print(scale_table(ours, peer, same_n))
    pace = (
        f"at {args.changes_per_second:g} status changes per second"
        if args.changes_per_second
        else f"over {args.write_seconds:g}s"
    )
    print(
        f"\nstatuses written {pace}, warm-up {args.warmup:g}s, resync {args.resync:g}s; "
        f"machine: {os.cpu_count()} CPUs"
    )


def run_metrics_pair(args: argparse.Namespace) -> None:
    """Metrics off and on, two children following the same applications at once; with
    `--pairs N`, N such runs, each on a fresh control plane, the order the children start in
    alternating (off first, then on first: ABAB), and the median of the changes."""
    from testenv.controlplane import ControlPlane

    nodes = max(3, math.ceil(args.apps / 200) + 1)
    changes: list[float] = []
    # --baseline-tree: a third child, the other tree's code with metrics on, beside them.
    first = ["ours", "ours-metrics"] + (["ours-metrics-base"] if args.baseline_tree else [])
    for index in range(args.pairs):
        order = first if index % 2 == 0 else first[::-1]
        with ControlPlane(node_count=nodes) as plane, tempfile.TemporaryDirectory() as tmp:
            results = measure_together(plane, order, args.apps, args, Path(tmp))
            for result in results:
                print(f"{result.peer}: {result}", file=sys.stderr, flush=True)
        print(f"\n## Pair {index + 1} of {args.pairs}, started {' then '.join(order)}\n")
        print(table(results))
        for peer in METRICS_ON:
            print(metrics_line(results, peer))
            print(clock_line(results, peer))
        print(
            f"\n{args.apps} applications followed by the children at once (API requests "
            f"are theirs together), statuses written {pace(args)}, warm-up {args.warmup:g}s, "
            f"resync {args.resync:g}s; machine: {os.cpu_count()} CPUs, load at the start "
            f"{results[0].load_before}, at the end {results[-1].load}",
            flush=True,
        )
        changes.append(metrics_change(results))
    if len(changes) > 1:
        listed = ", ".join(f"{100 * c:+.1f} %" for c in changes)
        print(
            f"\nmetrics on / off over {len(changes)} pairs: {listed}; median "
            f"{100 * statistics.median(changes):+.1f} %"
        )


def metrics_change(results: list[PeerResult]) -> float:
    on = next(r for r in results if r.peer == "ours-metrics")
    off = next(r for r in results if r.peer == "ours")
    return on.cpu_loop / off.cpu_loop - 1


def clock_line(results: list[PeerResult], peer: str = "ours-metrics") -> str:
    """The on child's metrics path, clocked inside its own loop (`--clock-metrics`)."""
    on = next((r for r in results if r.peer == peer), None)
    if on is None or on.metrics_clock is None:
        return ""
    clock = on.metrics_clock
    spent = clock.get("by_name", {})
    calls = ", ".join(
        f"{name} {count} ({spent.get(name, 0.0):.3f} s)" for name, count in clock["calls"].items()
    )
    return (
        f"metrics path inside the loop of {PEER_NAMES[peer]}: {clock['seconds']:.3f} s of CPU of "
        f"{on.cpu_loop:.2f} s = {100 * clock['seconds'] / on.cpu_loop:.2f} % (wrappers' own "
        f"{clock['wrapper_seconds']:.3f} s taken off; entries: {calls}); of it, the "
        f"collector's passes that began inside the path: {clock.get('gc_seconds', 0.0):.3f} s "
        f"(by generation {clock.get('gc_passes', {})}), the rest "
        f"{100 * (clock['seconds'] - clock.get('gc_seconds', 0.0)) / on.cpu_loop:.2f} %"
        + detail_line(clock)
        + calibration_line(clock, on.cpu_loop)
    )


def calibration_line(clock: dict[str, Any], cpu_loop: float) -> str:
    """SPARKK8S_CLOCK_CALIBRATE=1: an empty clocked entry's cost in the loop, taken off."""
    calibrated = clock.get("seconds_in_loop_calibrated")
    if calibrated is None:
        return ""
    empties = clock["empty_in_loop"]
    return (
        f"; an empty entry in the loop: {1e6 * clock['empty_in_loop_seconds'] / empties:.2f} us "
        f"({empties} clocked); with that cost per outermost entry taken off (not the tight "
        f"loop's): "
        f"{calibrated:.3f} s = {100 * calibrated / cpu_loop:.2f} %"
    )


def detail_line(clock: dict[str, Any]) -> str:
    """Each wrapped name's CPU, nested entries included (SPARKK8S_CLOCK_DETAIL=1; else the
    first-time wire-name probes alone)."""
    inclusive = {
        name: seconds for name, seconds in (clock.get("inclusive") or {}).items() if seconds
    }
    if not inclusive:
        return ""
    calls = clock["calls"]
    listed = ", ".join(
        f"{name} {seconds:.3f} s ({1e6 * seconds / max(1, calls.get(name, 0)):.1f} us x "
        f"{calls.get(name, 0)})"
        for name, seconds in inclusive.items()
    )
    return f"; by name, nested included: {listed}"


def pace(args: argparse.Namespace) -> str:
    if args.changes_per_second:
        return f"at {args.changes_per_second:g} status changes per second"
    return f"over {args.write_seconds:g}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--peers", default="ours,kpt")  # or ours,ours-metrics
    parser.add_argument("--write-seconds", type=float, default=20.0)
    parser.add_argument("--changes-per-second", type=float, default=0.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--deadline", type=float, default=180.0)
    parser.add_argument("--resync", type=float, default=30.0)
    parser.add_argument("--scale", help="comma-separated sizes, e.g. 1000,3000,10000")
    parser.add_argument("--executors-at", type=int, default=0)
    parser.add_argument("--kpt-apps", type=int, default=0)
    parser.add_argument("--metrics-pair", action="store_true")
    parser.add_argument("--pairs", type=int, default=1)  # --metrics-pair runs, ABAB
    # Clock the metrics path inside each child's loop (benchmarks/harness/metrics_clock.py).
    parser.add_argument("--clock-metrics", action="store_true")
    # --metrics-pair: also run another tree's code (e.g. `git archive` of main) with metrics
    # on, as a third child beside the two, so old and new are measured in the same sitting.
    parser.add_argument("--baseline-tree", type=Path)
    # exporter: a real statsd_exporter on loopback (the kernel wakes it for every datagram,
    # in the sender's time); socket: a bound UDP socket nothing reads (the sender's own cost,
    # as when the StatsD server runs on another host).
    parser.add_argument("--statsd-target", choices=("exporter", "socket"), default="exporter")
    parser.add_argument("--child")
    parser.add_argument("--namespace")
    parser.add_argument("--names-file")
    parser.add_argument("--result")
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return

    if args.scale:
        if args.kpt_apps:
            require_peer()
        run_scale(args)
        return
    if args.metrics_pair:
        run_metrics_pair(args)
        return
    if "kpt" in args.peers.split(","):
        require_peer()
    from testenv.controlplane import ControlPlane

    nodes = max(3, math.ceil(args.apps / 200) + 1)  # KWOK nodes hold 250 pods each
    with ControlPlane(node_count=nodes) as plane, tempfile.TemporaryDirectory() as tmp:
        results = []
        for peer in args.peers.split(","):
            results.append(measure(plane, peer, args.apps, args, Path(tmp)))
            print(f"{peer}: {results[-1]}", file=sys.stderr, flush=True)
        print(table(results))
        print(metrics_line(results))
        print(
            f"\n{args.apps} applications, statuses written over {args.write_seconds:g}s, "
            f"warm-up {args.warmup:g}s, resync {args.resync:g}s; machine: {os.cpu_count()} CPUs"
        )


if __name__ == "__main__":
    main()
