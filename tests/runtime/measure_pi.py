"""One PySpark Pi on the node agent, measured: `python -m tests.runtime.measure_pi`.

Starts a runtime plane, applies docs/rbac.yaml, submits `pi.py 4 200000` with 2 executors
through sparkk8s-submit as the documented submitter, and prints, in seconds since the
submission started: the driver pod Running, the first executor registered with the driver
(from the driver log's own timestamps), and the CLI's exit on success; then the peak of the
summed resident memory of every process of the application's pods, sampled every 0.2 s
from the memory cgroups of this plane's agent only (`total_rss`, no page cache; every
agent's node is `process-node-0`, the agent's pid names its folder), and the load average.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.controlplane import ControlPlane
from testenv.nodeagent.cgroups import MEMORY_ROOT, agent_cgroup_parent
from testenv.runtime_image import spark_image
from tests.support.real_spark import (
    BASE_CONF,
    PI,
    PodRecorder,
    registered_executors,
    submitter_kubeconfig,
)


def cgroup_rss(parent: Path) -> int:
    """The summed `total_rss` of the container cgroups directly under `parent`."""
    total = 0
    for stat in parent.glob("*/memory.stat"):
        try:
            for line in stat.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "total_rss":
                    total += int(value)
        except OSError:
            pass
    return total


def own_cgroups(plane: ControlPlane, root: Path = MEMORY_ROOT) -> Path:
    """Where this plane's agent keeps its containers' cgroups (not another session's)."""
    agent_pid = plane.pids().get("node-agent")
    if plane.agent is None or agent_pid is None:
        raise RuntimeError("the plane runs no node agent")
    return agent_cgroup_parent(plane.agent.node_name, agent_pid, root)


def main() -> int:
    plane = ControlPlane(node_count=0, process_node=True, images_file=spark_image()).start()
    try:
        namespace = "measure"
        with tempfile.TemporaryDirectory() as tmp:
            admin_kubeconfig = plane.admin_kubeconfig
            with KubeClient(kubeconfig_settings(str(admin_kubeconfig))) as admin:
                admin.request("POST", "/api/v1/namespaces", json={"metadata": {"name": namespace}})
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    listed = admin.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts")
                    if any(a["metadata"]["name"] == "default" for a in listed["items"]):
                        break
                    time.sleep(0.2)
            kubeconfig = submitter_kubeconfig(plane, namespace, Path(tmp) / "kubeconfig")
            parent = own_cgroups(plane)
            peak = [0]
            stop = threading.Event()

            def sample() -> None:
                # The agent makes its cgroup directory with the first container.
                while not stop.wait(0.2):
                    peak[0] = max(peak[0], cgroup_rss(parent))

            threading.Thread(target=sample, daemon=True).start()
            recorder = PodRecorder(plane, namespace).start()
            argv = [str(Path(sys.executable).with_name("sparkk8s-submit")), "--master",
                    f"k8s://{plane.server}", "--deploy-mode", "cluster", "--name", "pi"]  # fmt: skip
            for key, value in {**BASE_CONF, "spark.kubernetes.namespace": namespace}.items():
                argv += ["--conf", f"{key}={value}"]
            submitted_at = datetime.datetime.now(datetime.UTC)
            started = time.monotonic()
            done = subprocess.run(
                [*argv, PI, "4", "200000"],
                env={**os.environ, "KUBECONFIG": str(kubeconfig)},
                capture_output=True,
                text=True,
                check=False,
            )
            ended = time.monotonic() - started
            stop.set()
            recorder.stop()
            with KubeClient(kubeconfig_settings(str(admin_kubeconfig))) as admin:
                (driver,) = recorder.names("driver")
                log = admin.text(
                    f"/api/v1/namespaces/{namespace}/pods/{driver}/log", {"timestamps": "true"}
                )
        running = recorder.first("driver", "Running")
        registered = [t for t, _ in registered_executors(log) if t is not None]
        print(f"exit code                      {done.returncode}")
        print(
            f"driver Running                 {running.seconds if running else float('nan'):6.1f} s"
        )
        if registered:
            first = (min(registered) - submitted_at).total_seconds()
            print(f"first executor registered      {first:6.1f} s")
        print(f"succeeded (CLI exit)           {ended:6.1f} s")
        print(f"peak RSS of the pods           {peak[0] / 2**20:6.0f} MiB")
        print(f"load average                   {os.getloadavg()}")
        return done.returncode
    finally:
        plane.stop()


if __name__ == "__main__":
    sys.exit(main())
