"""Ten small PySpark queries as ten submitted applications, against the same ten through one
Spark Connect server (issue 26's measurement), in one sitting on the real node's plane.

    PYTHONPATH=. python -m benchmarks.bench_connect [--queries 10] [--order submit,connect]

- **Submitted:** `sparkk8s-submit` (cluster mode, waiting for the end) runs
  `benchmarks/connect_queries/query.py <index>` as each application's main, one after the
  other, one executor each; the file reaches the driver through a hostPath volume.
- **Connect:** `SparkK8sConnectServerOperator` starts one server (one executor; the wait in
  the worker), ten `remote_session`s (one per query, as ten client tasks would open) run
  the same `query()` with pyspark-client, and the teardown deletes the server. Its start
  and its teardown are inside the figures. They run in a fresh interpreter inside the
  node's network namespace (`RealNode.call_inside`), where the server pod's IP routes.

Every answer is checked. Both run Spark 4.2.1 (the pyspark-client line) with 512 MiB JVMs.

CPU-seconds:
- pods: `cpuacct.usage` of the real node's cgroup root (its pods' containers and their
  pause containers; cgroup v1 charges every ancestor, so a container gone stays counted)
  over the phase, which ends once every pod is gone;
- control plane and node: kube-apiserver, etcd, the controller manager, the scheduler, and
  the node's kubelet, containerd, dnsmasq and forwards, from /proc;
- client: this process and its children (the CLI runs, or the interpreter in the node's
  namespace that runs pyspark-client and the operator).

Not a test and not in CI: one run, printed as a Markdown table with the load averages.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes import config as k8s_config
from kubernetes.client import ApiClient

from benchmarks.connect_queries.query import expected, query
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import (
    BASE_CONF,
    SMALL_PODS,
    driver_log,
    submit_with_cli,
    submitter_kubeconfig,
)
from testenv.realnode.node import RealNode
from testenv.runtime_image import image_name

SPARK = "4.2.1"
QUERIES = Path(__file__).with_name("connect_queries")
MOUNT = "/opt/bench-queries"
CONF = {**BASE_CONF, **SMALL_PODS, "spark.kubernetes.container.image": image_name(SPARK),
        "spark.executor.instances": "1"}  # fmt: skip
TICK = os.sysconf("SC_CLK_TCK")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's cpuacct hierarchy


@dataclass(frozen=True)
class Cpu:
    pods: float
    plane: float
    client: float

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.pods - other.pods, self.plane - other.plane, self.client - other.client)


@dataclass(frozen=True)
class Phase:
    name: str
    wall: float
    cpu: Cpu
    load: tuple[float, float]  # the 1-minute load average at the start and at the end
    detail: str


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_now(plane: ControlPlane, node: RealNode) -> Cpu:
    pids = [pid for pid in (*plane.pids().values(), *node.pids().values()) if pid]
    own = sum((int(_stat(pid)[11]) + int(_stat(pid)[12])) / TICK for pid in pids)
    me, children = (resource.getrusage(who) for who in
                    (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
    client = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    usage = CPUACCT / node.cgroup_root.lstrip("/") / "cpuacct.usage"
    return Cpu(int(usage.read_text()) / 1e9, own, client)


def _pods(api: ApiClient, namespace: str) -> list[dict]:
    return kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]


def settle(api: ApiClient, namespace: str) -> None:
    """Every pod gone (the kubelet reports a pod gone once its containers ended), so its CPU
    is counted."""
    for pod in _pods(api, namespace):
        kube.request(
            api, "DELETE", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}"
        )
    wait_for(lambda: not _pods(api, namespace), 180, "no pod left", interval=1)


def measured(
    name: str, plane: ControlPlane, node: RealNode, api: ApiClient, namespace: str,
    run: Callable[[], str],
) -> Phase:  # fmt: skip
    settle(api, namespace)
    load, before, started = os.getloadavg()[0], cpu_now(plane, node), time.monotonic()
    detail = run()
    wall = time.monotonic() - started
    settle(api, namespace)
    return Phase(name, wall, cpu_now(plane, node) - before, (load, os.getloadavg()[0]), detail)


def submitted(plane: ControlPlane, api: ApiClient, ns: str, kubeconfig: Path, count: int) -> str:
    try:
        return _submitted(plane, api, ns, kubeconfig, count)
    except SystemExit:
        for pod in _pods(api, ns):  # a submitted driver's pod stays after its end
            if pod["metadata"]["labels"].get("spark-role") == "driver":
                text = driver_log(api, ns, pod["metadata"]["name"])
                print(f"--- {pod['metadata']['name']}:\n{text[-6000:]}", file=sys.stderr)
        raise


def _submitted(plane: ControlPlane, api: ApiClient, ns: str, kubeconfig: Path, count: int) -> str:
    conf = {
        **CONF,
        "spark.kubernetes.driver.volumes.hostPath.queries.mount.path": MOUNT,
        "spark.kubernetes.driver.volumes.hostPath.queries.mount.readOnly": "true",
        "spark.kubernetes.driver.volumes.hostPath.queries.options.path": str(QUERIES),
    }
    seen: set[str] = set()
    started = time.monotonic()
    for index in range(count):
        done = submit_with_cli(plane, ns, kubeconfig, f"bench-q{index}",
                               [f"local://{MOUNT}/query.py", str(index)], conf)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"query {index} failed ({done.returncode}): {done.stderr[-2000:]}")
        drivers = [pod["metadata"]["name"] for pod in _pods(api, ns)
                   if pod["metadata"]["labels"].get("spark-role") == "driver"]  # fmt: skip
        (driver,) = set(drivers) - seen
        seen.add(driver)
        print(f"submitted query {index} done at {time.monotonic() - started:.1f} s",
              file=sys.stderr, flush=True)  # fmt: skip
        line = f"QUERY {index} RESULT {expected(index)}"
        if line not in driver_log(api, ns, driver):
            raise SystemExit(f"query {index}: no {line!r} in {driver}'s log")
    return f"{count} applications, {count} drivers and {count} executors"


def _keep_driver_logs(api: ApiClient, ns: str, kept: dict[str, str], stop: threading.Event) -> None:
    """The drivers' logs as last read, to say why a server ended (its pod goes with it)."""
    while not stop.wait(2):
        for pod in _pods(api, ns):
            if pod["metadata"]["labels"].get("spark-role") == "driver":
                with contextlib.suppress(AssertionError):  # not started yet, or gone
                    kept[pod["metadata"]["name"]] = driver_log(api, ns, pod["metadata"]["name"])


def through_connect(
    plane: ControlPlane, node: RealNode, api: ApiClient, ns: str, kubeconfig: Path, count: int
) -> str:
    port = int(plane.apiserver_address.rsplit(":", 1)[1])
    return _keeping_driver_logs(
        api,
        ns,
        lambda: node.call_inside(
            _through_connect, ns, str(kubeconfig), count, host_ports=[port], timeout=1800
        ),
    )


def _keeping_driver_logs(api: ApiClient, ns: str, run: Callable[[], str]) -> str:
    kept: dict[str, str] = {}
    stop = threading.Event()
    keeper = threading.Thread(target=_keep_driver_logs, args=(api, ns, kept, stop), daemon=True)
    keeper.start()
    try:
        return run()
    except Exception:
        for name, text in kept.items():
            print(f"--- {name}'s log, as last read:\n{text[-6000:]}", file=sys.stderr)
        raise
    finally:
        stop.set()


def _through_connect(ns: str, kubeconfig: str, count: int) -> str:
    from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session
    from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator
    from testenv.fakes import FakeTaskInstance

    os.environ["AIRFLOW_DISABLE_GREENBACK_PORTAL"] = "true"
    os.environ["AIRFLOW_CONN_SPARK_K8S_DEFAULT"] = json.dumps(
        {"conn_type": "spark_k8s", "extra": {"kube_config_path": kubeconfig}}
    )
    os.environ["AIRFLOW_CONN_BENCH_TOKEN"] = json.dumps(
        {"conn_type": "spark_connect", "password": secrets.token_urlsafe(24)}
    )
    ti = FakeTaskInstance(dag_id="bench", task_id="server")
    setup = SparkK8sConnectServerOperator(
        task_id="server", namespace=ns, image=image_name(SPARK), conf=CONF,
        token_conn_id="bench_token", address="pod_ip", deferrable=False, startup_timeout=600,
    )  # fmt: skip
    started = time.monotonic()
    published = setup.execute({"ti": ti})
    ready = time.monotonic() - started
    print(f"Connect server ready at {ready:.1f} s", file=sys.stderr, flush=True)
    ti.xcom_push("return_value", published)
    for index in range(count):
        spark = remote_session(published)
        try:
            answer = query(spark, index)
        finally:
            spark.stop()
        print(f"Connect query {index} done at {time.monotonic() - started:.1f} s",
              file=sys.stderr, flush=True)  # fmt: skip
        if answer != expected(index):
            raise SystemExit(f"query {index}: {answer} != {expected(index)}")
    queried = time.monotonic() - started
    SparkK8sConnectServerOperator(
        task_id="stop", mode="teardown", server_task_id="server", namespace=ns
    ).execute({"ti": ti})
    return f"ready after {ready:.1f} s, {count} queries done at {queried:.1f} s, then teardown"


def table(phases: list[Phase]) -> str:
    header = "| queries | wall | CPU-s: pods | CPU-s: control plane | CPU-s: client | load |"
    rows = [header, "| --- | ---: | ---: | ---: | ---: | --- |"]
    for phase in phases:
        rows.append(
            f"| {phase.name} | {phase.wall:.1f} s | {phase.cpu.pods:.1f} | {phase.cpu.plane:.1f} "
            f"| {phase.cpu.client:.1f} | {phase.load[0]:.1f} → {phase.load[1]:.1f} |"
        )
    by = {phase.name: phase for phase in phases}
    one, other = by.get("submitted"), by.get("one Connect server")
    if one and other:
        ratios = [
            one.wall / other.wall, one.cpu.pods / other.cpu.pods,
            one.cpu.plane / other.cpu.plane, one.cpu.client / other.cpu.client,
        ]  # fmt: skip
        rows.append("| ratio | " + " | ".join(f"{value:.1f}x" for value in ratios) + " | |")
    return "\n".join(rows) + "\n\n" + "\n".join(f"- {p.name}: {p.detail}" for p in phases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--order", default="submit,connect")
    args = parser.parse_args(argv)
    node = RealNode()
    plane = ControlPlane(node_count=0, cluster_egress_socket=node.paths.egress_socket)
    plane.start()
    node.start(plane)
    node.ensure_spark_image(SPARK)
    api = k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))
    namespace = "bench-connect"
    try:
        kube.request(api, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        wait_for(lambda: bool(kube.request(
            api, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts")["items"]),
            30, "the default service account")  # fmt: skip
        kubeconfig = submitter_kubeconfig(
            plane, namespace, Path(tempfile.mkdtemp(prefix="bench-connect-")) / "kubeconfig"
        )
        runs = {
            "submit": lambda: measured("submitted", plane, node, api, namespace,
                                       lambda: submitted(plane, api, namespace, kubeconfig,
                                                         args.queries)),
            "connect": lambda: measured("one Connect server", plane, node, api, namespace,
                                        lambda: through_connect(plane, node, api, namespace,
                                                                kubeconfig, args.queries)),
        }  # fmt: skip
        phases = []
        for name in args.order.split(","):
            phases.append(runs[name]())
            print(table(phases[-1:]), file=sys.stderr, flush=True)
        print(table(phases))
    finally:
        api.close()
        node.stop()
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
