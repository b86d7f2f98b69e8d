"""The test control plane: real etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, with KWOK as the kubelet of a few fake nodes.

    with ControlPlane() as cp:
        print(cp.server, cp.admin_kubeconfig)

or standalone: `python -m testenv.controlplane` prints the kubeconfig path and
runs until interrupted (`--help` says so; the real-Spark plane is testenv/spark_plane.py).
`ControlPlane(api_only=True)` starts etcd and kube-apiserver alone: what a client talks to,
without the components that act on what it creates.

Every run gets its own temp dir (PKI, etcd data, logs, kubeconfigs), free
loopback ports, and processes stopped by their pid when it ends.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import secrets
import shutil
import signal
import ssl
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Self

from testenv.admin_client import AdminHttp
from testenv.binaries import find_binaries
from testenv.kwok_logs import write_spark_logs
from testenv.pki import PkiFiles, generate_pki
from testenv.ports import free_port
from testenv.processes import ManagedProcess, Server, wait_until
from testenv.realnode.config import egress_selector

STATIC_TOKEN_USER = "sparkk8s-token-user"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# IPv4 first (the primary family), then IPv6: Services may ask for either or both.
SERVICE_CLUSTER_IP_RANGES = "10.96.0.0/16,fd00:10:96::/112"
STAGES_FILE = Path(__file__).resolve().parent / "kwok-stages.yaml"
NODE_COUNT = 3
NODE_CAPACITY = {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"}
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
STARTUP_TIMEOUT_SECONDS = 90.0
# kube-apiserver's audit policy with `audit_log`: one line per create, patch (a server-side
# apply creates) and delete, saying who (the user and its client) asked; nothing of the
# objects' contents (level Metadata).
AUDIT_CREATES_AND_DELETES = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {"level": "Metadata", "verbs": ["create", "patch", "delete", "deletecollection"]},
        {"level": "None"},
    ],
}
# What talks to kube-apiserver through client-go informers, in start order (restart_apiserver).
DEPENDENTS = ("kube-controller-manager", "kube-scheduler", "kwok")


def kubeconfig_document(
    server: str,
    ca_file: Path,
    namespace: str = "default",
    cert_file: Path | None = None,
    key_file: Path | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """A kubeconfig with one cluster, one user and one context, as plain data."""
    user: dict[str, str] = {}
    if cert_file and key_file:
        user = {"client-certificate": str(cert_file), "client-key": str(key_file)}
    if token:
        user["token"] = token
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "sparkk8s-testenv",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": "sparkk8s-testenv-user", "user": user}],
        "contexts": [
            {
                "name": "sparkk8s-testenv",
                "context": {
                    "cluster": "sparkk8s-testenv",
                    "user": "sparkk8s-testenv-user",
                    "namespace": namespace,
                },
            }
        ],
        "current-context": "sparkk8s-testenv",
    }


def fake_node(name: str) -> dict[str, Any]:
    key, value = KWOK_NODE_ANNOTATION
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {"capacity": dict(NODE_CAPACITY), "allocatable": dict(NODE_CAPACITY)},
    }


def _is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class ControlPlane(Server):
    """See the module docstring; attributes are valid between start() and stop()."""

    def __init__(
        self,
        bin_dir: Path | None = None,
        node_count: int = NODE_COUNT,
        *,
        api_only: bool = False,
        cluster_egress_socket: Path | None = None,
        audit_log: Path | None = None,
    ) -> None:
        self.bin_dir = bin_dir or find_binaries()
        self.node_count = node_count
        self.api_only = api_only
        # The real node's forward (testenv/realnode): the API server's `cluster` traffic
        # (to kubelets, pods and Services) goes through its HTTP CONNECT proxy there.
        self.cluster_egress_socket = cluster_egress_socket
        # Where kube-apiserver logs who created and deleted what (`make demo` names them).
        self.audit_log = audit_log
        self.workdir = Path(tempfile.mkdtemp(prefix="sparkk8s-controlplane-"))
        self.static_token = secrets.token_urlsafe(32)
        self.startup_seconds: float | None = None
        self.timings: dict[str, float] = {}
        self.node_names = [f"kwok-node-{index}" for index in range(node_count)]
        self._pki: PkiFiles | None = None
        self._apiserver_port = 0
        self._etcd_port = 0
        self._kwok_server_port = 0
        self._scheduler_port = 0
        self._processes: dict[str, ManagedProcess] = {}
        self._admin: AdminHttp | None = None

    # -- public surface (docs/testing.md, "Test control plane contract") --

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self._apiserver_port}"

    @property
    def ca_file(self) -> Path:
        return self._pki_files.ca_cert

    @property
    def admin_cert_file(self) -> Path:
        return self._pki_files.admin_cert

    @property
    def admin_key_file(self) -> Path:
        return self._pki_files.admin_key

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def logs_dir(self) -> Path:
        return self.workdir / "logs"

    def pids(self) -> dict[str, int | None]:
        return {name: process.pid for name, process in self._processes.items()}

    def write_kubeconfig(
        self,
        path: Path,
        namespace: str = "default",
        token: str | None = None,
        server: str | None = None,
    ) -> Path:
        """Writes a kubeconfig for `namespace`: the admin certificate, or `token`; `server`
        replaces the API server's URL (a proxy in front of it)."""
        url = server or self.server
        if token:
            document = kubeconfig_document(url, self.ca_file, namespace, token=token)
        else:
            document = kubeconfig_document(
                url, self.ca_file, namespace, self.admin_cert_file, self.admin_key_file
            )
        path.write_text(json.dumps(document, indent=2))
        path.chmod(0o600)
        return path

    def request_token(
        self, namespace: str, service_account: str, expiration_seconds: int = 3600
    ) -> str:
        """A bound service-account token from the TokenRequest API."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": expiration_seconds},
        }
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token"
        return str(self._admin_http.json("POST", path, body)["status"]["token"])

    def metrics_text(self) -> str:
        status, data = self._admin_http.raw("GET", "/metrics")
        if status != 200:
            raise RuntimeError(f"GET /metrics -> HTTP {status}")
        return data.decode()

    @property
    def apiserver_address(self) -> str:
        """host:port of kube-apiserver (what a fault-injecting proxy forwards to)."""
        return f"127.0.0.1:{self._apiserver_port}"

    def stop_etcd(self) -> None:
        """Stops etcd (SIGTERM); kube-apiserver stays up and fails what needs storage."""
        self._processes["etcd"].stop()

    def start_etcd(self) -> None:
        """Starts etcd again on the same ports and data; returns once etcd is healthy,
        kube-apiserver ready and the plane settled (`wait_settled`)."""
        self._processes["etcd"].start()
        self._wait_etcd_healthy()
        self._wait_apiserver_ready()
        self.wait_settled()

    def restart_etcd(self, down_seconds: float = 0.0) -> None:
        """stop_etcd, `down_seconds` of outage, start_etcd (for fault tests)."""
        self.stop_etcd()
        time.sleep(down_seconds)
        self.start_etcd()

    def restart_apiserver(self) -> None:
        """Stops the API server and starts it again on the same port and etcd (for fault
        tests); returns once the whole plane is settled again (`wait_settled`).

        The controller manager, scheduler and KWOK are stopped first and started after:
        their client-go informers back off on every refused connection (0.8 s doubling to
        30 s, doubled again by jitter, reset only after 2 quiet minutes), so after two
        restarts in a row a namespace waited up to a minute for its service account. The
        clients under test (ours) live through the restart; the plane's own components
        come back fresh (a new KWOK is a new lease holder: its predecessor's node leases
        are deleted, or it would wait them out, 40 s)."""
        dependents = [self._processes[name] for name in DEPENDENTS if name in self._processes]
        for process in dependents:
            process.stop()
        apiserver = self._processes["kube-apiserver"]
        apiserver.stop()
        apiserver.start()
        self._wait_apiserver_ready()
        if "kwok" in self._processes:
            self._release_kwok_leases()
        for process in reversed(dependents):
            process.start()
        self.wait_settled()

    def wait_settled(self, timeout: float = STARTUP_TIMEOUT_SECONDS) -> None:
        """Returns once every component acts again, shown by a probe: a new namespace gets
        its default service account and root CA ConfigMap (controller manager), a pod in it
        is bound (scheduler) and Running (KWOK). The probe namespace is then deleted."""
        if self.api_only:
            self._wait_apiserver_ready()
            return
        watched = list(self._processes.values())
        wait_until(
            lambda: _insecure_get_ok(f"https://127.0.0.1:{self._scheduler_port}/readyz"),
            timeout,
            "kube-scheduler /readyz",
            watch=watched,
        )
        wait_until(self._nodes_ready, timeout, "nodes Ready", watch=watched)
        namespace = f"sparkk8s-plane-probe-{secrets.token_hex(3)}"
        self._admin_http.json("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        try:
            for path, what in (
                (f"/api/v1/namespaces/{namespace}/serviceaccounts/default", "service account"),
                (f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt", "root CA"),
            ):
                wait_until(
                    functools.partial(self._exists, path),
                    timeout,
                    f"kube-controller-manager ({what} of a new namespace)",
                    watch=watched,
                )
            if self.node_count:
                self._admin_http.json("POST", f"/api/v1/namespaces/{namespace}/pods", _probe_pod())
                wait_until(
                    functools.partial(self._pod_running, namespace, "probe"),
                    timeout,
                    "kube-scheduler and KWOK (a new pod Running)",
                    watch=watched,
                )
        finally:
            self._admin_http.raw("DELETE", f"/api/v1/namespaces/{namespace}")

    # -- lifecycle --

    def start(self) -> Self:
        started = time.monotonic()
        try:
            self._start_all()
        except Exception as error:
            # The temp dir (and its logs) goes with stop(); keep the tails for the report.
            logs = self._log_tails()
            self.stop()
            raise RuntimeError(f"control plane failed to start: {error}\n{logs}") from error
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def stop(self) -> None:
        """Stops every process by its pid (dependents first) and removes the temp dir."""
        for name in (
            "kwok",
            "kube-scheduler",
            "kube-controller-manager",
            "kube-apiserver",
            "etcd",
        ):
            process = self._processes.get(name)
            if process is not None:
                process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- internals --

    @property
    def _pki_files(self) -> PkiFiles:
        if self._pki is None:
            raise RuntimeError("the control plane has not been started")
        return self._pki

    @property
    def _admin_http(self) -> AdminHttp:
        if self._admin is None:
            raise RuntimeError("the control plane has not been started")
        return self._admin

    def _mark(self, label: str, since: float) -> None:
        self.timings[label] = round(time.monotonic() - since, 2)

    def _start_all(self) -> None:
        t0 = time.monotonic()
        self.logs_dir.mkdir()
        self._pki = generate_pki(self.workdir / "pki")
        token_file = self.workdir / "tokens.csv"
        token_file.write_text(f'{self.static_token},{STATIC_TOKEN_USER},{STATIC_TOKEN_USER},""\n')
        token_file.chmod(0o600)
        self._apiserver_port = free_port()
        self.write_kubeconfig(self.admin_kubeconfig)
        self._admin = AdminHttp(
            self._apiserver_port, self.ca_file, self.admin_cert_file, self.admin_key_file
        )
        self._mark("pki", t0)

        self._etcd_port = self._start_etcd()
        # The API server spends its first second or so setting up before it
        # needs etcd, and retries until etcd answers: start both at once.
        self._start_apiserver(self._etcd_port, token_file)
        self._wait_etcd_healthy()
        self._mark("etcd", t0)
        self._wait_apiserver_ready()
        self._mark("kube-apiserver", t0)
        if self.api_only:
            return

        self._scheduler_port = scheduler_port = self._start_controllers()
        if self.node_count:
            self._start_kwok()
        for name in self.node_names[: self.node_count]:
            self._admin_http.json("POST", "/api/v1/nodes", fake_node(name))
        watched = list(self._processes.values())
        wait_until(
            lambda: _insecure_get_ok(f"https://127.0.0.1:{scheduler_port}/readyz"),
            STARTUP_TIMEOUT_SECONDS,
            "kube-scheduler /readyz",
            watch=watched,
        )
        self._mark("kube-scheduler", t0)
        wait_until(self._nodes_ready, STARTUP_TIMEOUT_SECONDS, "nodes Ready", watch=watched)
        self._mark("nodes", t0)
        # pods/log needs each kubelet endpoint; it is checked as the API server will (our CA).
        for port, address, what in self._kubelet_endpoints():
            url = f"https://{address}:{port}/healthz"
            wait_until(
                functools.partial(_verified_get_ok, url, self.ca_file),
                STARTUP_TIMEOUT_SECONDS,
                f"{what} /healthz",
                watch=watched,
            )
        # The default service account appears once the controller manager's
        # service-account controller runs; tests' namespaces need the same.
        wait_until(
            lambda: (
                self._admin_http.raw("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0]
                == 200
            ),
            STARTUP_TIMEOUT_SECONDS,
            "kube-controller-manager (default service account)",
            watch=watched,
        )
        self._mark("kube-controller-manager", t0)

    def _log_tails(self, max_bytes: int = 1500) -> str:
        return "\n".join(
            f"--- {name} (pid {process.pid}) ---\n{process.log_tail(max_bytes)}"
            for name, process in self._processes.items()
        )

    def _spawn(self, name: str, argv: list[str]) -> ManagedProcess:
        process = ManagedProcess(name, argv, self.logs_dir / f"{name}.log")
        self._processes[name] = process
        process.start()
        return process

    def _binary(self, name: str) -> str:
        return str(self.bin_dir / name)

    def _start_etcd(self) -> int:
        client_port, peer_port = free_port(), free_port()
        client_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        self._spawn(
            "etcd",
            [
                self._binary("etcd"),
                "--name=sparkk8s-testenv",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=sparkk8s-testenv={peer_url}",
                "--initial-cluster-state=new",
                # Test data is thrown away; skipping fsync keeps etcd fast on shared disks.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        return client_port

    def _start_apiserver(self, etcd_port: int, token_file: Path) -> None:
        pki = self._pki_files
        self._spawn(
            "kube-apiserver",
            [
                self._binary("kube-apiserver"),
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self._apiserver_port}",
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--token-auth-file={token_file}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={pki.service_account_pub}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                # Dual-stack, as Spark's Service options (ipFamilies IPv4,IPv6) expect of a cluster.
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGES}",
                "--allow-privileged=true",
                "--profiling=false",
                # pods/log goes to KWOK's kubelet server, found by the node's
                # InternalIP (127.0.0.1) and daemon endpoint port.
                "--kubelet-preferred-address-types=InternalIP",
                f"--kubelet-certificate-authority={pki.ca_cert}",
                *self._egress_args(),
                *self._audit_args(),
            ],
        )

    def _audit_args(self) -> list[str]:
        if self.audit_log is None:
            return []
        policy = self.workdir / "audit-policy.json"
        policy.write_text(json.dumps(AUDIT_CREATES_AND_DELETES))
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
        ]

    def _egress_args(self) -> list[str]:
        if self.cluster_egress_socket is None:
            return []
        config = self.workdir / "egress-selector.json"
        config.write_text(json.dumps(egress_selector(self.cluster_egress_socket)))
        return [f"--egress-selector-config-file={config}"]

    def _wait_etcd_healthy(self) -> None:
        wait_until(
            lambda: (
                _http_json(f"http://127.0.0.1:{self._etcd_port}/health").get("health") == "true"
            ),
            20,
            "etcd /health",
            watch=[self._processes["etcd"]],
        )

    def _wait_apiserver_ready(self) -> None:
        wait_until(
            lambda: self._admin_http.raw("GET", "/readyz")[0] == 200,
            STARTUP_TIMEOUT_SECONDS,
            "kube-apiserver /readyz",
            watch=[self._processes["kube-apiserver"], self._processes["etcd"]],
        )

    def _start_controllers(self) -> int:
        """Starts the controller manager, scheduler and KWOK; returns the scheduler's port."""
        pki = self._pki_files
        kubeconfig = str(self.admin_kubeconfig)
        delegated_auth = [
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
        ]
        self._spawn(
            "kube-controller-manager",
            [
                self._binary("kube-controller-manager"),
                f"--kubeconfig={kubeconfig}",
                *delegated_auth,
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
                "--leader-elect=false",
                f"--service-account-private-key-file={pki.service_account_key}",
                f"--root-ca-file={pki.ca_cert}",
                f"--cluster-signing-cert-file={pki.ca_cert}",
                f"--cluster-signing-key-file={pki.ca_key}",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGES}",
                "--profiling=false",
            ],
        )
        scheduler_port = free_port()
        self._spawn(
            "kube-scheduler",
            [
                self._binary("kube-scheduler"),
                f"--kubeconfig={kubeconfig}",
                *delegated_auth,
                "--bind-address=127.0.0.1",
                f"--secure-port={scheduler_port}",
                f"--cert-dir={self.workdir / 'scheduler-certs'}",
                "--leader-elect=false",
                "--profiling=false",
            ],
        )
        return scheduler_port

    def _start_kwok(self) -> None:
        pki = self._pki_files
        kubeconfig = str(self.admin_kubeconfig)
        key, value = KWOK_NODE_ANNOTATION
        logs_config = write_spark_logs(
            self.workdir / "container-logs", datetime.datetime.now(datetime.UTC)
        )
        self._kwok_server_port = free_port()
        self._spawn(
            "kwok",
            [
                self._binary("kwok"),
                f"--kubeconfig={kubeconfig}",
                f"--config={STAGES_FILE}",
                f"--config={logs_config}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={key}={value}",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.0/16",
                # KWOK's kubelet server (container logs): the node's address and port
                # point the API server at it; it serves the API server's certificate.
                "--node-ip=127.0.0.1",
                f"--node-port={self._kwok_server_port}",
                f"--server-address=127.0.0.1:{self._kwok_server_port}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
            ],
        )

    def _kubelet_endpoints(self) -> list[tuple[int, str, str]]:
        endpoints = []
        if self.node_count:
            endpoints.append((self._kwok_server_port, "127.0.0.1", "KWOK kubelet server"))
        return endpoints

    def _release_kwok_leases(self) -> None:
        for name in self.node_names[: self.node_count]:
            status, data = self._admin_http.raw(
                "DELETE", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
            )
            if status not in (200, 404):
                raise RuntimeError(f"DELETE lease {name} -> HTTP {status}: {data[:200]!r}")

    def _exists(self, path: str) -> bool:
        return self._admin_http.raw("GET", path)[0] == 200

    def _pod_running(self, namespace: str, name: str) -> bool:
        pod = self._admin_http.json("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        return bool(pod.get("status", {}).get("phase") == "Running")

    def _nodes_ready(self) -> bool:
        nodes = self._admin_http.json("GET", "/api/v1/nodes")["items"]
        ready = {node["metadata"]["name"] for node in nodes if _is_ready(node)}
        return set(self.node_names) <= ready


def _probe_pod() -> dict[str, Any]:
    """A pod KWOK runs and holds Running (kwok-stages.yaml) until its namespace goes."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "annotations": {"kwok.sparkk8s.io/hold": "true"}},
        "spec": {"containers": [{"name": "probe", "image": "probe"}]},
    }


def _http_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=2) as response:
        return dict(json.loads(response.read()))


def _verified_get_ok(url: str, ca_file: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca_file))
    with urllib.request.urlopen(url, timeout=2, context=context) as response:
        return bool(response.status == 200)


def _insecure_get_ok(url: str) -> bool:
    # The scheduler's health port uses a self-signed certificate made at start;
    # this only asks a loopback process whether it is ready.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, timeout=2, context=context) as response:
        return bool(response.status == 200)


class StopSignals:
    """SIGTERM and SIGINT, from now on, ask a command's plane to stop: `wait` returns, and the
    plane's `with` block stops every process and removes the temp dir."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._request)
        signal.signal(signal.SIGINT, self._request)

    def _request(self, signum: int, frame: object) -> None:
        self.requested = True

    def wait(self) -> None:
        while not self.requested:
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m testenv.controlplane",
        description=(
            "Start the KWOK test control plane (etcd, kube-apiserver, controller manager, "
            f"scheduler and {NODE_COUNT} fake nodes whose pods never run), print its admin "
            "kubeconfig, and run until interrupted (Ctrl-C or SIGTERM stops every process and "
            "removes the temp dir). For pods that run real Spark: python -m testenv.spark_plane."
        ),
    ).parse_args(argv)
    control_plane = ControlPlane()
    stop = StopSignals()
    with control_plane:
        lines = (
            f"control plane ready in {control_plane.startup_seconds:.1f}s",
            f"server:     {control_plane.server}",
            f"kubeconfig: {control_plane.admin_kubeconfig}",
            f"logs:       {control_plane.logs_dir}",
            "Ctrl-C stops it and removes the temp dir.",
        )
        print("\n".join(lines), flush=True)  # a reader on a pipe sees them now
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
