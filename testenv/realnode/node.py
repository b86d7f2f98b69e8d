"""A real node for the test control plane: containerd (with runc and the bridge CNI
plugin), the real kubelet v1.35.4 and dnsmasq, in namespaces of the instance's own
(testenv/realnode/namespaces.py), registered as `real-node-0` with our API server.

    node = RealNode()
    plane = ControlPlane(node_count=0, cluster_egress_socket=node.paths.egress_socket).start()
    node.start(plane)      # Ready, images imported (pause, shell, spark:4.3.0)
    node.prefetch_spark_images(["3.5.9"])  # imported in the background, meanwhile
    node.ensure_spark_image("3.5.9")   # another line's image, imported on first use
    ...
    node.stop()            # everything stopped by pid, nothing left behind
    plane.stop()

The plane stays on the host's loopback; testenv/realnode/forward.py bridges the two ways
(the kubelet and the pods to the API server, the API server's `cluster` traffic to the
kubelet and the pods). Images are built from local files (testenv/realnode/image.py) and
imported with `ctr`; nothing is pulled and image GC is off. Every instance has its own
scratch folder and cgroup root, so parallel runs never meet.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.pki import PkiFiles, issue_from_ca
from testenv.processes import ManagedProcess, built_by, wait_until
from testenv.realnode.cluster_dns import ServiceRecords, dnsmasq_argv
from testenv.realnode.config import (
    API_FORWARD_PORT,
    INSIDE_NETWORKS,
    NODE_IP,
    NodePaths,
    cni_network,
    containerd_config,
    kubelet_config,
)
from testenv.realnode.forward import ForwardConfig
from testenv.realnode.image import PAUSE_IMAGE, build_image, node_images, spark_spec
from testenv.realnode.namespaces import NodeNamespaces
from testenv.realnode.netns import call_inside
from testenv.runtime_image import SPARK_VERSION

REPO = Path(__file__).resolve().parents[2]
INSTALL_PACKAGES = REPO / "testenv" / "install_node_packages.sh"
NODE_NAME = "real-node-0"
STARTUP_TIMEOUT_SECONDS = 90.0
T = TypeVar("T")


def node_packages() -> Path:
    """The unpacked Debian packages: $SPARKK8S_NODE_PACKAGES_DIR, else the folder
    install_node_packages.sh prints."""
    return built_by(INSTALL_PACKAGES, "SPARKK8S_NODE_PACKAGES_DIR")


def _python_module(module: str, *args: str) -> list[str]:
    """A testenv module run from this checkout, whatever the working directory."""
    bootstrap = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); import runpy; "
        f"sys.argv = [{module!r}, *sys.argv[1:]]; runpy.run_module({module!r}, run_name='__main__')"
    )
    return [sys.executable, "-c", bootstrap, *args]


@dataclass
class RealNode:
    node_name: str = NODE_NAME
    spark_versions: tuple[str, ...] = (SPARK_VERSION,)
    scratch: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="sparkk8s-realnode-"))
    )
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.paths = NodePaths(self.scratch)
        self.instance = secrets.token_hex(4)
        self.cgroup_root = f"/sparkk8s-realnode-{self.instance}"
        self._processes: dict[str, ManagedProcess] = {}
        self._namespaces: NodeNamespaces | None = None
        self._records: ServiceRecords | None = None
        self._packages: Path | None = None
        self._imported: set[str] = set()  # the image names containerd holds
        self._image_lock = threading.Lock()  # one build or import at a time
        self._prefetch: threading.Thread | None = None
        self._stopping = threading.Event()
        self.logs_dir = self.scratch / "logs"
        self.logs_dir.mkdir(exist_ok=True)

    # -- lifecycle --

    def start(self, plane: ControlPlane) -> RealNode:
        try:
            self._start(plane)
        except Exception as error:
            tails = self.log_tails()
            self.stop()
            raise RuntimeError(f"the real node failed to start: {error}\n{tails}") from error
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stops what it started by pid (the kubelet first, so it starts nothing more), then
        kills whatever is left in its namespaces and cgroups and removes its folders."""
        self._stopping.set()
        if self._prefetch is not None:
            self._prefetch.join()  # an import under way ends first: it runs in the namespaces
        if self._records is not None:
            self._records.stop()
        exposed = sorted(name for name in self._processes if name.startswith("forward-"))
        for name in ("kubelet", "dnsmasq", "containerd", "forward", *exposed):
            process = self._processes.get(name)
            if process is not None:
                started = time.monotonic()
                process.stop()
                self.timings[f"stop {name}"] = round(time.monotonic() - started, 2)
        if self._namespaces is not None:
            started = time.monotonic()
            self._namespaces.teardown()
            self.timings["teardown"] = round(time.monotonic() - started, 2)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def leftovers(self) -> list[str]:
        found = self._namespaces.leftovers() if self._namespaces else []
        found += [f"{name}, pid {p.pid}" for name, p in self._processes.items() if p.running()]
        if self.scratch.exists():
            found.append(str(self.scratch))
        return found

    def ensure_spark_image(self, version: str) -> str:
        """The name of the Spark image of `version` on this node: built unless cached, and
        imported the first time a test asks for it (an import takes 11-37 s, so a session
        imports only the lines its tests run, once each)."""
        with self._image_lock:
            spec = spark_spec(version)
            if spec.name not in self._imported:
                if self._packages is None:
                    raise RuntimeError("the real node has not been started")
                started = time.monotonic()
                tar = build_image(spec)
                self.timings[f"build {spec.name}"] = round(time.monotonic() - started, 2)
                self._import_images(self._packages, [(spec.name, tar)])
            return spec.name

    def prefetch_spark_images(self, versions: list[str]) -> None:
        """Imports those lines' images in a thread, one after the other, while tests use the
        node: an import mostly waits on the disk, so a test that asks for its line later
        waits for less (or nothing). A failure here is left for `ensure_spark_image` to
        raise in the test that needs the image."""

        def run() -> None:
            for version in versions:
                if self._stopping.is_set():
                    return
                try:
                    self.ensure_spark_image(version)
                except Exception:  # noqa: BLE001 - the test asking for it retries and raises
                    return

        self._prefetch = threading.Thread(target=run, name="image-prefetch", daemon=True)
        self._prefetch.start()

    def expose_host_port(self, port: int) -> str:
        """`NODE_IP:port`, where the node's pods reach the server on the host's loopback port
        `port` (an object store a test runs): a listener inside the namespace forwards to
        it, so nothing is routed out of either side. The node's own processes reach it at
        `127.0.0.1:port` too (containerd pulls from a registry there over plain HTTP, as it
        does from any loopback registry). One forward per port, kept until stop."""
        name = f"forward-{port}"
        if name not in self._processes:
            config = ForwardConfig(
                netns=self._ns.netns,
                listen=[(NODE_IP, port), ("127.0.0.1", port)],
                upstream=("127.0.0.1", port),
                proxy_socket=None,
                inside_networks=[],
            )
            self._spawn_forward(name, config)
        return f"{NODE_IP}:{port}"

    def call_inside(
        self, function: Callable[..., T], *args: object, host_ports: Iterable[int] = (),
        timeout: float = 600.0,
    ) -> T:  # fmt: skip
        """`function(*args)` in a fresh interpreter in the node's network namespace, where the
        pods' addresses route: a client that dials a pod (Spark Connect's, by the server pod's
        IP) runs there, as it would in the cluster. The host's loopback ports `host_ports`
        (the API server's) answer there at 127.0.0.1 on the same port, so a kubeconfig
        written for this process serves inside too. Neither a port-forward (containerd's
        works here, but the product dials the pod IP itself: the readiness probe, the status
        page, the client's URL) nor a route out of the namespace (it would change the host's
        network, and two instances use the same addresses) would do."""
        for port in host_ports:
            self.expose_host_port(port)
        return call_inside(self.netns_path, function, *args, timeout=timeout)

    def container_pid(self, container_id: str) -> int:
        """The host pid of a running container's first process (`containerd://<id>`, as a
        pod's status names it), from containerd's task list: the node has no pid namespace
        of its own, so a test can signal that process as a kernel's OOM killer would."""
        if self._packages is None:
            raise RuntimeError("the real node has not been started")
        task = container_id.removeprefix("containerd://")
        for line in self._ctr(self._packages, "tasks", "list").splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 2 and fields[0] == task:
                return int(fields[1])
        raise LookupError(f"containerd runs no task {task}")

    def pids(self) -> dict[str, int | None]:
        """The node's own processes (containerd, the kubelet, dnsmasq, the forwards) by name."""
        return {name: process.pid for name, process in self._processes.items()}

    def log_tails(self, max_bytes: int = 2000) -> str:
        return "\n".join(
            f"--- {name} (pid {process.pid}) ---\n{process.log_tail(max_bytes)}"
            for name, process in self._processes.items()
        )

    # -- internals --

    def _mark(self, label: str, since: float) -> None:
        self.timings[label] = round(time.monotonic() - since, 2)

    def _spawn(self, name: str, argv: list[str]) -> ManagedProcess:
        process = ManagedProcess(name, argv, self.logs_dir / f"{name}.log")
        self._processes[name] = process
        process.start()
        return process

    def _spawn_inside(self, name: str, argv: list[str]) -> ManagedProcess:
        namespaces = self._ns
        env = [f"{k}={v}" for k, v in namespaces.tool_env().items() if k != "LD_LIBRARY_PATH"]
        libs = f"LD_LIBRARY_PATH={namespaces.tool_env()['LD_LIBRARY_PATH']}"
        # Only dnsmasq and runc need the unpacked libraries; the rest are static.
        return self._spawn(name, [*namespaces.enter(), "env", *env, libs, *argv])

    @property
    def netns_path(self) -> str:
        """The node's network namespace, where its pods' addresses are routed."""
        return self._ns.netns

    @property
    def _ns(self) -> NodeNamespaces:
        if self._namespaces is None:
            raise RuntimeError("the real node has not been started")
        return self._namespaces

    def _start(self, plane: ControlPlane) -> None:
        t0 = time.monotonic()
        packages = self._packages = node_packages()
        images = node_images(self.spark_versions)
        self._mark("packages and images", t0)
        self._namespaces = NodeNamespaces(self.scratch, packages, self.cgroup_root.lstrip("/"))
        self._namespaces.start()
        self._mark("namespaces", t0)
        self._start_forward(plane)
        self._start_containerd(packages)
        self._mark("containerd", t0)
        self._import_images(packages, images)
        self._mark("images imported", t0)
        dnsmasq = self._start_dnsmasq(packages)
        self._start_kubelet(plane)
        admin = AdminHttp(
            plane._apiserver_port, plane.ca_file, plane.admin_cert_file, plane.admin_key_file
        )
        self._records = ServiceRecords(admin, self.paths.dns_hosts, dnsmasq).start()
        wait_until(
            lambda: _node_ready(admin.json("GET", f"/api/v1/nodes/{self.node_name}")),
            STARTUP_TIMEOUT_SECONDS,
            f"node {self.node_name} Ready",
            watch=list(self._processes.values()),
        )
        self._mark("node Ready", t0)

    def _start_forward(self, plane: ControlPlane) -> None:
        config = ForwardConfig(
            netns=self._ns.netns,
            listen=[("127.0.0.1", API_FORWARD_PORT), (NODE_IP, API_FORWARD_PORT)],
            upstream=("127.0.0.1", int(plane.server.rsplit(":", 1)[1])),
            proxy_socket=str(self.paths.egress_socket),
            inside_networks=INSIDE_NETWORKS,
        )
        self._spawn_forward("forward", config)

    def _spawn_forward(self, name: str, config: ForwardConfig) -> None:
        config_file = self.scratch / f"{name}.json"
        config_file.write_text(config.to_json())
        process = self._spawn(name, _python_module("testenv.realnode.forward", str(config_file)))
        wait_until(lambda: "forwarding" in process.log_tail(), 30, name, watch=[process])

    def _start_containerd(self, packages: Path) -> None:
        config = self.paths.containerd / "config.toml"
        self.paths.containerd.mkdir()
        self.paths.cni_conf.mkdir(parents=True)
        (self.paths.cni_conf / "10-sparkk8s.conflist").write_text(
            json.dumps(cni_network(self.paths))
        )
        config.write_text(containerd_config(self.paths, packages, PAUSE_IMAGE))
        process = self._spawn_inside(
            "containerd",
            [str(packages / "usr/bin/containerd"), f"--config={config}", "--log-level=info"],
        )
        wait_until(self.paths.containerd_socket.exists, 30, "containerd's socket", watch=[process])

    def _ctr(self, packages: Path, *args: str) -> str:
        completed = subprocess.run(
            [*self._ns.enter(), str(packages / "usr/bin/ctr"),
             f"--address={self.paths.containerd_socket}", "--namespace=k8s.io", *args],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if completed.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: {completed.stderr.strip()}")
        return completed.stdout

    def _import_images(self, packages: Path, images: list[tuple[str, Path]]) -> None:
        for name, tar in images:
            started = time.monotonic()
            self._ctr(packages, "images", "import", "--snapshotter=overlayfs", str(tar))
            self.timings[f"import {name}"] = round(time.monotonic() - started, 2)
        listed = self._ctr(packages, "images", "list", "--quiet")
        missing = [name for name, _ in images if name not in listed.split()]
        if missing:
            raise RuntimeError(f"ctr imported, yet containerd lists no {missing}: {listed}")
        self._imported.update(name for name, _ in images)

    def _start_dnsmasq(self, packages: Path) -> int:
        self.paths.dns_hosts.mkdir()
        process = self._spawn_inside(
            "dnsmasq", dnsmasq_argv(packages / "usr/sbin/dnsmasq", self.paths.dns_hosts)
        )
        wait_until(lambda: "started" in process.log_tail(), 30, "dnsmasq", watch=[process])
        assert process.pid is not None
        return process.pid

    def _start_kubelet(self, plane: ControlPlane) -> None:
        pki: PkiFiles = plane._pki_files
        directory = self.paths.kubelet
        directory.mkdir(parents=True)
        issue_from_ca(pki, directory / "node.crt", directory / "node.key",
                      f"system:node:{self.node_name}", "system:nodes")  # fmt: skip
        issue_from_ca(pki, directory / "serving.crt", directory / "serving.key", self.node_name,
                      server_names=[NODE_IP, self.node_name])  # fmt: skip
        kubeconfig = directory / "node.kubeconfig"
        kubeconfig.write_text(json.dumps(_node_kubeconfig(pki, directory)))
        (self.scratch / "resolv.conf").write_text("")
        config = directory / "config.json"
        config.write_text(
            json.dumps(
                kubelet_config(self.paths, pki.ca_cert, directory / "serving.crt",
                               directory / "serving.key", self.cgroup_root)
            )
        )  # fmt: skip
        self._spawn_inside(
            "kubelet",
            [
                str(plane.bin_dir / "kubelet"),
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={directory / 'root'}",
                f"--hostname-override={self.node_name}",
                f"--node-ip={NODE_IP}",
                "--v=1",
            ],
        )


def _node_kubeconfig(pki: PkiFiles, directory: Path) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "plane",
                "cluster": {
                    "server": f"https://127.0.0.1:{API_FORWARD_PORT}",
                    "certificate-authority": str(pki.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": "node",
                "user": {
                    "client-certificate": str(directory / "node.crt"),
                    "client-key": str(directory / "node.key"),
                },
            }
        ],
        "contexts": [{"name": "node", "context": {"cluster": "plane", "user": "node"}}],
        "current-context": "node",
    }


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
