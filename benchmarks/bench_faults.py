"""The fault table: 1,000 applications in flight in one event loop (as in the triggerer),
through each fault in turn, on the real control plane (`make chaos`).

For each fault, on a fresh namespace: 1,000 held driver pods; one SparkK8sApplicationTrigger
per application, all through one connection; then `testenv/trigger_fleet/fault_harness.py`: the
fault starts, half of the drivers end while it lasts, it heals, the other half end after.
Network faults sit in a real Toxiproxy between our client and kube-apiserver; etcd is stopped
and started again; API Priority and Fairness refuses our identity with 429s. The triggerer
fault is a child process running the triggers, SIGKILLed while drivers end, and a fresh one
started for the applications nobody reported yet (as Airflow hands a dead triggerer's
triggers to another).

    python -m benchmarks.bench_faults [--apps 1000] [--faults latency,reset,...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_trigger import admin_api, app_id_of, create_pods, end_pods, load_average

CONN = "spark_k8s_chaos"
FAULTS = ("latency", "reset", "blackhole", "bandwidth", "slicer", "etcd", "apf", "triggerer")


def connect(kubeconfig: Path) -> None:
    os.environ[f"AIRFLOW_CONN_{CONN.upper()}"] = json.dumps(
        {"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}
    )


def run_fault(plane: Any, toxi: Any, name: str, args: argparse.Namespace, tmp: Path) -> str:
    from testenv.controlplane import STATIC_TOKEN_USER
    from testenv.harness.apf import POD_READER, grant
    from testenv.harness.faults import apf_throttling, etcd_outage, network_faults
    from testenv.trigger_fleet.fault_harness import run_under_fault
    from testenv.trigger_fleet.tracked_apps import Fleet, TrackedApp

    namespace = f"chaos-{name}-{os.getpid()}"
    names = create_pods(plane, namespace, args.apps)
    apps = [TrackedApp(app_id_of(n), n, 3 if i % 3 == 0 else 0) for i, n in enumerate(names)]
    api = admin_api(plane)
    proxy = toxi.proxy(f"api-{name}", plane.apiserver_address)
    seconds = args.fault_seconds
    if name == "etcd":
        fault = etcd_outage(plane, seconds)
    elif name == "apf":
        grant(api, namespace, STATIC_TOKEN_USER, POD_READER, "spark-pods-reader")
        fault = apf_throttling(api, plane, namespace, STATIC_TOKEN_USER, seconds)
    else:
        fault = network_faults(proxy, seconds)[name]
    token = plane.static_token if name == "apf" else None
    server = None if name in ("etcd", "apf") else proxy.url
    connect(plane.write_kubeconfig(tmp / f"{name}.kubeconfig", namespace, token, server))
    report = asyncio.run(
        run_under_fault(
            api,
            Fleet(namespace, apps),
            CONN,
            fault,
            after_seconds=args.after_seconds,
            deadline=args.deadline,
            resync_interval=args.resync,
        )
    )
    toxi.delete(proxy)
    for problem in report.problems[:5]:
        print(f"  {name}: {problem}", file=sys.stderr)
    return report.row()


# --------------------------------------------------------------------------- triggerer kill


def triggerer(namespace: str, names: list[str], events: Path) -> subprocess.Popen[bytes]:
    """A child running one trigger per name in one loop; each event is a line in `events`,
    flushed as it fires (what Airflow's triggerer commits)."""
    argv = [
        sys.executable,
        "-m",
        "benchmarks.bench_faults",
        "--child-namespace",
        namespace,
        "--child-events",
        str(events),
        "--child-names",
        ",".join(names),
    ]
    return subprocess.Popen(argv, env=dict(os.environ), stdout=subprocess.DEVNULL)


async def child_main(namespace: str, names: list[str], events: Path) -> None:
    from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

    with events.open("a") as out:

        async def follow(name: str) -> None:
            trigger = SparkK8sApplicationTrigger(
                application_id=app_id_of(name),
                namespace=namespace,
                kubernetes_conn_id=CONN,
                driver_pod_name=name,
                stream_logs=False,
            )
            async for event in trigger.run():
                line = {"name": name, "at": time.time(), "status": event.payload.get("status")}
                out.write(json.dumps(line) + "\n")
                out.flush()

        await asyncio.gather(*(follow(n) for n in names))


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_triggerer_kill(plane: Any, args: argparse.Namespace, tmp: Path) -> str:
    """SIGKILL the triggerer while half the drivers end, start a fresh one for what nobody
    reported, end the rest. Delays: from a status write to the event that reported it."""
    from testenv.harness.faults import FaultReport

    namespace = f"chaos-triggerer-{os.getpid()}"
    names = create_pods(plane, namespace, args.apps)
    connect(plane.write_kubeconfig(tmp / "triggerer.kubeconfig", namespace))
    events = tmp / "triggerer-events.jsonl"
    first = triggerer(namespace, names, events)
    time.sleep(args.warmup)
    half = len(names) // 2
    written: dict[str, float] = {}

    def end(batch: list[str], seconds: float, first_index: int = 0) -> None:
        written.update(end_pods(plane, namespace, batch, seconds, first_index))

    writer = threading.Thread(target=end, args=(names[:half], args.fault_seconds * 0.8))
    writer.start()
    time.sleep(args.fault_seconds / 2)
    os.kill(first.pid, signal.SIGKILL)  # mid-way: some of the first half reported, some not
    first.wait()
    killed_at = time.time()
    writer.join()
    reported = {e["name"] for e in read_events(events)}
    second = triggerer(namespace, [n for n in names if n not in reported], events)
    healed = time.time()
    end(names[half:], args.after_seconds, half)
    deadline = time.monotonic() + args.deadline
    while len({e["name"] for e in read_events(events)}) < len(names):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    second.kill()
    second.wait()
    seen = read_events(events)
    report = FaultReport("triggerer SIGKILL + fresh triggerer", len(names))
    firsts: dict[str, dict[str, Any]] = {}
    for event in seen:
        if event["name"] in firsts:
            report.duplicates += 1
        else:
            firsts[event["name"]] = event
    report.completions = len(firsts)
    for index, name in enumerate(names):
        if name not in firsts:
            continue
        event = firsts[name]
        if event["status"] != ("failed" if index % 3 == 0 else "success"):
            report.false_failures += 1
        delay = event["at"] - written[name]
        # "During": the driver ended while no triggerer was alive or before the kill.
        (report.during if written[name] < healed else report.after).append(delay)
    print(f"  triggerer: killed at {killed_at:.1f}, fresh at {healed:.1f}", file=sys.stderr)
    return report.row()


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--fault-seconds", type=float, default=20.0)
    parser.add_argument("--after-seconds", type=float, default=10.0)
    parser.add_argument("--deadline", type=float, default=180.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--resync", type=float, default=30.0)
    parser.add_argument("--child-namespace")
    parser.add_argument("--child-events")
    parser.add_argument("--child-names")
    args = parser.parse_args()
    logging.disable(logging.INFO)  # thousands of state-change lines would measure logging
    if args.child_namespace:
        names = args.child_names.split(",")
        asyncio.run(child_main(args.child_namespace, names, Path(args.child_events)))
        return

    from testenv.controlplane import ControlPlane
    from testenv.harness.faults import TABLE_HEADER
    from testenv.toxiproxy import Toxiproxy

    rows = []
    nodes = max(3, math.ceil(args.apps / 200) + 1)
    with (
        ControlPlane(node_count=nodes) as plane,
        Toxiproxy() as toxi,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for name in args.faults.split(","):
            started = time.monotonic()
            if name == "triggerer":
                row = run_triggerer_kill(plane, args, Path(tmp))
            else:
                row = run_fault(plane, toxi, name, args, Path(tmp))
            rows.append(row)
            print(f"{row}  ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)
    print(TABLE_HEADER)
    print("\n".join(rows))
    print(
        f"\n{args.apps} applications per fault; faults last {args.fault_seconds:g}s, half the "
        f"drivers end during it, half over {args.after_seconds:g}s after; resync "
        f"{args.resync:g}s; load average at the end {load_average()}"
    )


if __name__ == "__main__":
    main()
