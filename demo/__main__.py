"""`make demo`: the PySpark Pi example DAG through the real Airflow, on real Spark, on a real
kubelet.

Starts etcd, kube-apiserver, the controllers and the scheduler, and the real node
(testenv/realnode): the kubelet v1.35.4 built from Kubernetes' Go module, Debian's containerd
and runc, the bridge CNI plugin and dnsmasq as cluster DNS, in a network and mount namespace
this run makes and removes. The Spark 4.3.0 OCI image is laid out from pyspark's distribution
(testenv/realnode/image.py), built once and imported into containerd. The namespace gets
docs/rbac.yaml as documented: Airflow submits as the `airflow` service account with the
submitter Role, the driver runs as `spark` with the driver Role. Then `airflow dags test
spark_pi` runs with AIRFLOW_HOME in the repo's ignored `.airflow/` (SQLite); `dags test` runs
the deferred task's trigger in-process.

Printed, all as it happens: the objects that appear in the namespace (the operator's driver
pod, Service, NetworkPolicy and ConfigMap; the driver's executor pods and ConfigMap), every
state change of each pod, who created and who deleted each object (the operator, the
driver, or the garbage collector), as kube-apiserver's audit log names the user or the
controller that asked, the task's own lines, the notable lines of the real
driver log the trigger streams (Spark's start-up, executors registering, the computed Pi),
then the application's final state, the final XCom, and the node the pods ran on with the
kubelet and container runtime its Node object reports. The whole Airflow log is kept in
`.airflow/`. Everything started here is stopped by its pid at the end.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from demo.audit_trail import AuditTrail, actor, service_account_user
from testenv.controlplane import ControlPlane
from testenv.realnode.node import RealNode
from testenv.spark_plane import open_namespace

REPO = Path(__file__).resolve().parents[1]
AIRFLOW_HOME = REPO / ".airflow"
NAMESPACE = "spark-demo"
DAG_ID = "spark_pi"
SUBMITTER = "airflow"  # the service account Airflow submits as (docs/rbac.yaml)
# Said plainly: what runs for real, and what stands in for a cluster's machinery.
REAL_AND_STAND_INS = (
    "  Real: Airflow (`dags test`), kube-apiserver, etcd, the controller manager and the\n"
    "  scheduler, every request and object the operator sends, the kubelet (v1.35.4, from\n"
    "  Kubernetes' own source), containerd and runc running each pod's containers from an\n"
    "  OCI image, pod addresses on a bridge, cluster DNS, and Spark 4.3.0 itself: a driver\n"
    "  and two executor JVMs that compute Pi and log what they do.\n"
    "  Stand-ins: one node, in a network namespace this run makes on this machine (nothing\n"
    "  leaves it); dnsmasq answers for the Services instead of CoreDNS, and one DNAT rule\n"
    "  takes the `kubernetes` Service to the API server instead of kube-proxy. The image is\n"
    "  built from local files (a JRE, Python, pyspark's Spark, our entrypoint and pi.py), not\n"
    "  pulled; its entrypoint starts the JVMs with the JIT's first tier only, the serial\n"
    "  collector and no bytecode verification of Spark's jars, and pyspark's Python modules\n"
    "  carry their compiled bytecode beside them (both cheaper on a small machine).\n"
    "  pi.py seeds each partition's generator with the partition's number: the same figure\n"
    "  every run is expected (the same samples), not a sign of a cached result."
)
# Lines of the Airflow run worth showing; the whole log is kept in .airflow/.
INTERESTING = (
    "Created ", "Submitted Spark application", "Spark application ", "Deferring", "Adopting",
    "[driver]", "Deleting driver", "Keeping driver", "succeeded in", "Trigger fired", "ERROR",
    "Task failed", "failed:", "Result delivered",
)  # fmt: skip
# Of the real driver log the trigger streams (hundreds of lines), the ones worth showing.
DRIVER_HIGHLIGHTS = (
    "Running Spark version", "Submitted application", "Registered executor",
    "Job 0 finished", "Pi is roughly", "samples in", "Successfully stopped SparkContext",
    "Exception", "Error",
)  # fmt: skip


_SAY = threading.Lock()


def say(text: str) -> None:
    """One whole line at a time: the cluster watchers and Airflow's output print from threads."""
    with _SAY:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def airflow_env(kubeconfig: Path) -> dict[str, str]:
    connection = {
        "conn_type": "spark_k8s",
        "extra": {"kube_config_path": str(kubeconfig), "namespace": NAMESPACE},
    }
    return {
        **os.environ,
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_K8S_DEFAULT": json.dumps(connection),
    }


# Airflow's imports take a good part of the run: this CLI wrapper makes them while the
# control plane starts, and runs the command once the parent creates the gate file.
GATED_CLI = """
import pathlib, sys, time
import airflow.cli.cli_parser, airflow.cli.commands.dag_command  # noqa: F401 (warm-up)
import airflow.sdk.execution_time.supervisor as supervisor
import airflow_provider_sparkk8s.operators.spark_k8s  # noqa: F401
import airflow_provider_sparkk8s.triggers.spark_k8s  # noqa: F401
supervisor.in_process_api_server().app  # dags test builds this in-process API app per run
gate = pathlib.Path(sys.argv[1])
deadline = time.monotonic() + 600
while not gate.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
if gate.read_text() != "go":
    sys.exit(1)
from airflow.__main__ import main
sys.argv = ["airflow", *sys.argv[2:]]
sys.exit(main())
"""


class AirflowCommand:
    """One airflow CLI command in a subprocess, streaming the interesting lines to stdout and
    keeping every line in `log`."""

    def __init__(self, *args: str, env: dict[str, str], log: Path, gate: Path | None = None):
        if gate is None:
            command = [str(Path(sys.executable).with_name("airflow")), *args]
        else:
            command = [sys.executable, "-c", GATED_CLI, str(gate), *args]
        self.log = log
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def wait(self) -> int:
        assert self.process.stdout is not None
        with self.log.open("w") as sink:
            for line in self.process.stdout:
                sink.write(line)
                if _worth_showing(line):
                    say("  airflow | " + _short(line))
        return self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


def _worth_showing(line: str) -> bool:
    if "[driver]" in line:
        return any(marker in line for marker in DRIVER_HIGHLIGHTS)
    return any(marker in line for marker in INTERESTING)


def _short(line: str) -> str:
    text = line.rstrip()
    # structlog lines: "<time> [level] message [logger] loc=..." -> keep the message
    if "] " in text:
        text = text.split("] ", 1)[1]
    for cut in (" [airflow.", " [airflow_provider_sparkk8s", " loc="):
        if cut in text:
            text = text.split(cut, 1)[0]
    return text


# What the watcher follows: (API group path, plural). The NetworkPolicy is the operator's too
# (Spark's NetworkPolicyFeatureStep, 4.2 and later).
WATCHED = (
    ("/api/v1", "pods"),
    ("/api/v1", "services"),
    ("/api/v1", "configmaps"),
    ("/apis/networking.k8s.io/v1", "networkpolicies"),
)


class ClusterWatcher:
    """Prints pods, services, config maps and network policies as they appear, change and go
    in the namespace, with who made each and who deleted it, as the audit log names them."""

    def __init__(self, client: KubeClient, trail: AuditTrail):
        self.client = client
        self.trail = trail
        # Users as kube-apiserver authenticates them -> who they are in the demo; the driver's
        # service account is added when the driver pod is seen.
        self.known = {service_account_user(NAMESPACE, SUBMITTER): "the operator"}
        self.stopped = threading.Event()
        self.seen: dict[str, str] = {}
        self.pod_nodes: dict[str, str] = {}  # pod name -> the node the scheduler bound it to
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._watch, args=(group, plural), daemon=True)
            for group, plural in WATCHED
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def _watch(self, group: str, plural: str) -> None:
        path = f"{group}/namespaces/{NAMESPACE}/{plural}"
        while not self.stopped.is_set():
            try:
                for event in self.client.watch(path, {"timeoutSeconds": "5"}):
                    if self.stopped.is_set():
                        return
                    self._show(event, plural)
            except Exception as error:  # noqa: BLE001 - the demo keeps going; the watch only decorates it
                if not self.stopped.is_set():
                    say(f"  cluster | watch on {plural} interrupted: {error}")
                    time.sleep(0.5)

    def _show(self, event: dict[str, Any], plural: str) -> None:
        obj = event.get("object") or {}
        kind, metadata = obj.get("kind"), obj.get("metadata") or {}
        if event.get("type") not in ("ADDED", "MODIFIED", "DELETED") or (
            kind == "ConfigMap" and (metadata.get("name") == "kube-root-ca.crt")
        ):
            return
        key = f"{kind}/{metadata.get('name')}"
        if kind == "Pod" and (node := (obj.get("spec") or {}).get("nodeName")):
            self.pod_nodes[str(metadata.get("name"))] = node
        if is_driver(obj) and (account := (obj.get("spec") or {}).get("serviceAccountName")):
            self.known[service_account_user(NAMESPACE, account)] = "the driver"
        # A watch that restarts replays ADDED for what exists: show changes only.
        kind_of_change = "gone" if event["type"] == "DELETED" else "present"
        summary = kind_of_change if kind != "Pod" else f"{kind_of_change} {pod_summary(obj)}"
        with self._lock:  # one watcher thread at a time decides what is new
            if self.seen.get(key) == summary:
                return
            first = key not in self.seen
            self.seen[key] = summary
        detail = pod_summary(obj) if kind == "Pod" else ""
        name = str(metadata.get("name"))
        if event["type"] == "DELETED":
            line = f"{key} deleted{self._by('delete', plural, name, obj)} {detail}"
        elif first:
            line = f"{key} created{self._by('create', plural, name, obj)} {detail}"
        else:
            line = f"{key} now {detail}"
        say(f"  cluster | {line}".rstrip())

    def _by(self, verb: str, plural: str, name: str, obj: dict[str, Any]) -> str:
        """Who asked kube-apiserver to `verb` the object, from its audit log."""
        if verb == "create":
            event = self.trail.created(plural, NAMESPACE, name)
        else:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            event = self.trail.deleted(plural, NAMESPACE, name, labels)
        if event is None:
            return " (no such request in kube-apiserver's audit log)"
        who = actor(event, self.known)
        owners = (obj.get("metadata") or {}).get("ownerReferences") or []
        if who == "the garbage collector" and owners:
            gone = ", ".join(f"{owner.get('kind')}/{owner.get('name')}" for owner in owners)
            return f" (by {who}: its owner {gone} is gone)"
        return f" (by {who})"


def is_driver(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return obj.get("kind") == "Pod" and labels.get("spark-role") == "driver"


def pod_summary(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    parts = [status.get("phase") or "-"]
    for container in status.get("containerStatuses") or []:
        for state, detail in (container.get("state") or {}).items():
            reason = detail.get("reason") or ""
            code = detail.get("exitCode")
            parts.append(f"{container['name']}={state}{':' + reason if reason else ''}"
                         f"{' exit ' + str(code) if code is not None else ''}")  # fmt: skip
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        parts.append("terminating")
    return " ".join(parts)


def node_report(pod_nodes: dict[str, str], nodes: dict[str, dict[str, Any]]) -> list[str]:
    """Which node each pod ran on, and that node's kubelet and container runtime as its Node
    object's `status.nodeInfo` says (the kubelet reports them; nothing here names them)."""
    lines = []
    for node in sorted(set(pod_nodes.values())):
        pods = sorted(pod for pod, on in pod_nodes.items() if on == node)
        info = (nodes.get(node) or {}).get("status", {}).get("nodeInfo") or {}
        lines.append(f"  node {node}: {', '.join(pods)}")
        for key in ("kubeletVersion", "containerRuntimeVersion", "osImage", "kernelVersion"):
            lines.append(f"    status.nodeInfo.{key}: {info.get(key, '(not reported)')}")
    return lines or ["  no pod was bound to a node"]


def last_run_number() -> int:
    """The newest run of the DAG in the metadata database (0: none): a run this demo makes
    comes after it."""
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        row = db.execute("SELECT MAX(id) FROM dag_run WHERE dag_id = ?", (DAG_ID,)).fetchone()
    return int(row[0] or 0)


def final_xcoms(after_run: int) -> dict[str, Any]:
    """The task's XComs in the DAG's newest run after `after_run`: this demo's run, never an
    earlier one's (empty if `dags test` made none)."""
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        rows = db.execute(
            "SELECT key, value FROM xcom WHERE dag_id = ? AND task_id = ? AND run_id = "
            "(SELECT run_id FROM dag_run WHERE dag_id = ? AND id > ? ORDER BY id DESC LIMIT 1)",
            (DAG_ID, DAG_ID, DAG_ID, after_run),
        ).fetchall()
    return {key: json.loads(value) if isinstance(value, str) else value for key, value in rows}


def main() -> int:
    started = time.monotonic()
    AIRFLOW_HOME.mkdir(exist_ok=True)
    kubeconfig = AIRFLOW_HOME / "demo.kubeconfig"
    env = airflow_env(kubeconfig)
    if not (AIRFLOW_HOME / "airflow.db").exists():
        say("Creating the Airflow metadata database (SQLite, first run only)...")
        migrate = AirflowCommand("db", "migrate", env=env, log=AIRFLOW_HOME / "migrate.log")
        if migrate.wait() != 0:
            say(f"airflow db migrate failed; see {AIRFLOW_HOME / 'migrate.log'}")
            return 1
    runs_before = last_run_number()
    gate = AIRFLOW_HOME / "demo.gate"
    gate.unlink(missing_ok=True)
    log = AIRFLOW_HOME / "demo-dags-test.log"
    say(f"Starting Airflow (`airflow dags test {DAG_ID}`, waiting for the cluster)...")
    run = AirflowCommand("dags", "test", DAG_ID, env=env, log=log, gate=gate)
    say(
        "Starting the local control plane (etcd, kube-apiserver, controllers, scheduler) and "
        "the real node (kubelet, containerd, runc, dnsmasq in a network namespace of its own; "
        "the Spark 4.3.0 image is built from pyspark once, cached, and imported)..."
    )
    say(REAL_AND_STAND_INS)
    node = RealNode()
    plane: ControlPlane | None = None
    watcher: ClusterWatcher | None = None
    try:
        audit_log = AIRFLOW_HOME / "demo-audit.log"  # who created and deleted what
        audit_log.unlink(missing_ok=True)
        plane = ControlPlane(
            node_count=0, cluster_egress_socket=node.paths.egress_socket, audit_log=audit_log
        )
        plane.start()
        say(f"  control plane ready in {plane.startup_seconds:.1f}s at {plane.server}")
        node.start(plane)
        say(
            f"  node {node.node_name} Ready {node.timings['node Ready']:.1f}s after its start "
            f"(of which the images' build or cache look-up "
            f"{node.timings['packages and images']:.1f}s, their import into containerd "
            f"{node.timings['images imported'] - node.timings['containerd']:.1f}s)"
        )
        # The administrator's part: the namespace and docs/rbac.yaml. The watcher below only
        # observes; Airflow submits with the submitter's token, the driver runs as `spark`.
        open_namespace(plane, NAMESPACE, kubeconfig, SUBMITTER, token_seconds=3600)
        admin = KubeClient(kubeconfig_settings(str(plane.admin_kubeconfig)))
        say(f"  namespace {NAMESPACE}: docs/rbac.yaml applied; Airflow submits as {SUBMITTER}")
        watcher = ClusterWatcher(admin, AuditTrail(audit_log))
        watcher.start()
        gate.write_text("go")
        say(f"Running the {DAG_ID} DAG (the deferral runs in-process under `dags test`)...")
        code = run.wait()
        watcher.stop()
        if code != 0:
            say(f"`airflow dags test {DAG_ID}` exited with {code}; its whole log: {log}")
        xcoms = final_xcoms(runs_before)
        if xcoms:
            say("Final XCom of the spark_pi task:")
            say(json.dumps(xcoms.get("return_value") or xcoms.get("spark_application"), indent=2))
        else:
            say(f"This run of {DAG_ID} left no XCom.")
        state = (xcoms.get("spark_application") or {}).get("state") or "not known (no XCom)"
        say("Where the pods ran, as the API server reports it:")
        nodes = {
            name: admin.request("GET", f"/api/v1/nodes/{name}")
            for name in set(watcher.pod_nodes.values())
        }
        for line in node_report(watcher.pod_nodes, nodes):
            say(line)
        say(f"Full Airflow log: {log}")
        say(f"Demo finished in {time.monotonic() - started:.1f}s: application {state}")
        return 0 if code == 0 and state == "succeeded" else 1
    finally:
        if not gate.exists():
            gate.write_text("stop")  # the waiting Airflow process exits on its own
        run.stop()
        if watcher is not None:
            watcher.stop()
        node.stop()
        if left := node.leftovers():
            say(f"The real node left behind: {left}")
        if plane is not None:
            plane.stop()


if __name__ == "__main__":
    sys.exit(main())
