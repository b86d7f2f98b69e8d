"""The real node (testenv/realnode: the kubelet v1.35.4, containerd and runc), measured:
`python -m benchmarks.bench_real_node`. (It once ran the node agent first, a stand-in kubelet
since retired, for the comparison in docs/testing.md, "Real Spark on a local node".)

On a plane of its own, as the documented submitter (docs/rbac.yaml):
- pod create -> Running: `--pods` plain pods (the Spark 4.3.0 image running `sleep`), one
  after the other, each timed from its POST to the first status that says Running;
- one PySpark Pi (`pi.py 4 200000`, 2 executors, 512m each, 200m cores a pod) through
  sparkk8s-submit: the driver pod Running, the first executor registered with the driver
  (the driver log's own timestamps), the CLI's exit on success, all in seconds since the
  submission;
- the peak of the resident memory of the application's containers, sampled every 0.2 s from
  the memory cgroups (`total_rss` with the children's, no page cache) of the real node's
  cgroup root (its pods' containers and their pause containers).
The load average is printed before and after. Nothing is asserted: the figures
go into docs/testing.md by hand, with the load.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.controlplane import ControlPlane
from testenv.real_spark import PI, SMALL_PODS, PodRecorder, registered_executors
from testenv.real_spark import submit_with_cli as submit
from testenv.realnode.node import RealNode
from testenv.spark_plane import open_namespace

NAMESPACE = "bench"
MEMORY_ROOT = Path("/sys/fs/cgroup/memory")  # cgroup v1's memory hierarchy
IMAGE = "sparkk8s/spark:4.3.0"


def total_rss(stat: Path) -> int:
    """`total_rss` of one memory cgroup (with its children), 0 once it is gone."""
    try:
        for line in stat.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "total_rss":
                return int(value)
    except OSError:
        pass
    return 0


@contextmanager
def real_node_plane() -> Iterator[tuple[ControlPlane, Callable[[], int]]]:
    node = RealNode()
    plane = ControlPlane(node_count=0, cluster_egress_socket=node.paths.egress_socket)
    try:
        plane.start()
        node.start(plane)
        stat = MEMORY_ROOT / node.cgroup_root.lstrip("/") / "memory.stat"
        yield plane, lambda: total_rss(stat)
    finally:
        node.stop()
        plane.stop()


def pod_to_running(admin: KubeClient, plane: ControlPlane, index: int) -> float:
    """Seconds from a plain pod's POST to its first Running status; the pod is then deleted."""
    name = f"plain-{index}"
    recorder = PodRecorder(plane, NAMESPACE).start()
    body = {
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "command": ["sleep", "600"],
                    "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }
    started = time.monotonic()
    admin.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", json=body)
    try:
        deadline = started + 180
        while time.monotonic() < deadline:
            if any(e.name == name and e.phase == "Running" for e in recorder.events):
                break
            time.sleep(0.05)
        else:
            raise TimeoutError(f"pod {name} not Running after 180 s: {recorder.events}")
        return time.monotonic() - started
    finally:
        recorder.stop()
        admin.request(
            "DELETE",
            f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
            params={"gracePeriodSeconds": "0"},
        )


def spark_pi(
    plane: ControlPlane,
    kubeconfig: Path,
    rss: Callable[[], int],
    options: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One Pi through sparkk8s-submit (`options`: more of its own, bench_secure_preset's
    `--policy FILE`), timed; its driver pod is deleted after, so runs do not pile up."""
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], rss())

    threading.Thread(target=sample, daemon=True).start()
    recorder = PodRecorder(plane, NAMESPACE).start()
    submitted_at = datetime.datetime.now(datetime.UTC)
    started = time.monotonic()
    done = submit(plane, NAMESPACE, kubeconfig, "pi", [PI, "4", "200000"], SMALL_PODS, options)
    ended = time.monotonic() - started
    stop.set()
    recorder.stop()
    (driver,) = recorder.names("driver")
    with KubeClient(kubeconfig_settings(str(plane.admin_kubeconfig))) as admin:
        log = admin.text(
            f"/api/v1/namespaces/{NAMESPACE}/pods/{driver}/log", {"timestamps": "true"}
        )
        admin.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{driver}")
    running = recorder.first("driver", "Running")
    registered = [t for t, _ in registered_executors(log) if t is not None]
    return {
        "exit code": done.returncode,
        "driver Running (s)": running.seconds if running else float("nan"),
        "first executor registered (s)": (
            (min(registered) - submitted_at).total_seconds() if registered else float("nan")
        ),
        "succeeded, CLI exit (s)": ended,
        "peak RSS of the pods (MiB)": peak[0] / 2**20,
    }


def measure(name: str, plane_of: Any, pods: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"load before": os.getloadavg()}
    started = time.monotonic()
    with plane_of() as (plane, rss), tempfile.TemporaryDirectory() as tmp:
        figures["plane and node up (s)"] = time.monotonic() - started
        kubeconfig = open_namespace(plane, NAMESPACE, Path(tmp) / "kubeconfig")
        with KubeClient(kubeconfig_settings(str(plane.admin_kubeconfig))) as admin:
            # The first pod of a node also pays for the image's first use: timed apart.
            times = [pod_to_running(admin, plane, index) for index in range(pods)]
        figures["pod create -> Running, each (s)"] = [round(t, 2) for t in times]
        figures["pod create -> Running, median (s)"] = statistics.median(times)
        figures.update(spark_pi(plane, kubeconfig, rss))
    figures["load after"] = os.getloadavg()
    print(f"\n{name}", flush=True)
    for key, value in figures.items():
        shown = f"{value:.2f}" if isinstance(value, float) else str(value)
        print(f"  {key:<36} {shown}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_real_node")
    parser.add_argument("--pods", type=int, default=5, help="plain pods per node (5)")
    arguments = parser.parse_args()
    measure("real node (kubelet, containerd, runc)", real_node_plane, arguments.pods)


if __name__ == "__main__":
    main()
