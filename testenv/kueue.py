"""Kueue's real manager against the test control plane, its webhooks on a loopback URL.

    with KueueManager(plane) as kueue:
        kueue.enable_namespace("ns")          # the webhooks and the manager act there only
        kueue.create_queues("ns", "lq", cluster_queue="cq", cpu="2", memory="4Gi")

The binary and Kueue's CRDs come from `testenv/build_kueue.sh` (sigs.k8s.io/kueue at a pinned
release, built into ~/.cache). What a cluster's Helm chart does is done here by hand:

- the CRDs are created from the module's config/components/crd/bases;
- Kueue's internal certificate management is off: its webhook server serves a certificate
  issued by the run's test CA for 127.0.0.1, and the Mutating/ValidatingWebhookConfigurations
  are Kueue's own (config/components/webhook/manifests.yaml), reduced to the pod integration
  and Kueue's own objects, with a `url:` clientConfig and the test CA as caBundle;
- the pod webhooks and `managedJobsNamespaceSelector` match only namespaces labelled
  `ENABLED_LABEL`, so the other tests sharing the session's control plane never meet Kueue.

With its certificate management off, the manager reads its metrics certificate from the fixed
path /etc/kueue/metrics/certs. It runs in a private mount namespace whose /etc is an overlay
(upper layer on a tmpfs) holding that file, so nothing is written to this machine's /etc.

Stopping removes the webhook configurations first: a Fail-policy webhook whose server is gone
would refuse every pod in the enabled namespaces.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Self

import yaml

from testenv.admin_client import AdminHttp, AdminHttpError
from testenv.controlplane import ControlPlane, free_port
from testenv.pki import issue_from_ca
from testenv.processes import ManagedProcess, Server, built_by, wait_until

BUILD_SCRIPT = Path(__file__).resolve().parent / "build_kueue.sh"
GO_MOD = Path(__file__).resolve().parent / "go.mod"
KUEUE_MODULE = "sigs.k8s.io/kueue"
ENABLED_LABEL = ("sparkk8s.test/kueue", "enabled")
KUEUE_NAMESPACE = "kueue-system"
WEBHOOK_BASE_NAME = "sparkk8s-kueue"
STARTUP_TIMEOUT_SECONDS = 120.0
API = "/apis/kueue.x-k8s.io/v1beta2"


def find_kueue() -> Path:
    """$SPARKK8S_KUEUE_DIR (kueue-manager and crd/), else what build_kueue.sh builds or finds."""
    directory = built_by(BUILD_SCRIPT, "SPARKK8S_KUEUE_DIR")
    if not os.access(directory / "kueue-manager", os.X_OK) or not (directory / "crd").is_dir():
        raise FileNotFoundError(f"no kueue-manager and crd/ in {directory}")
    return directory


def _module_webhooks() -> list[dict[str, Any]]:
    """Kueue's webhook manifests as shipped in its module (the build downloaded it)."""
    gomodcache = Path(os.environ.get("GOMODCACHE", Path.home() / ".cache" / "go-mod"))
    version = _pinned_version()
    manifests = gomodcache / f"sigs.k8s.io/kueue@{version}/config/components/webhook/manifests.yaml"
    return [document for document in yaml.safe_load_all(manifests.read_text()) if document]


def _pinned_version() -> str:
    """The release testenv/go.mod requires: the one testenv/build.sh builds."""
    for line in GO_MOD.read_text().splitlines():
        fields = line.split()
        if fields[:1] == [KUEUE_MODULE] and len(fields) >= 2:
            return fields[1]
    raise RuntimeError(f"no {KUEUE_MODULE} requirement in {GO_MOD}")


def _kept(webhook: dict[str, Any]) -> bool:
    """Pods (the integration we enable) and Kueue's own objects; the webhooks of the other
    integrations would point at paths this manager does not serve."""
    groups = {group for rule in webhook.get("rules", []) for group in rule.get("apiGroups", [])}
    return groups <= {"", "kueue.x-k8s.io"}


def webhook_configurations(port: int, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's Mutating/ValidatingWebhookConfigurations, served at https://127.0.0.1:port."""
    selector = {"matchLabels": {ENABLED_LABEL[0]: ENABLED_LABEL[1]}}
    result = []
    for document in _module_webhooks():
        kind = document["kind"].removesuffix("WebhookConfiguration").lower()
        webhooks = []
        for webhook in document.get("webhooks", []):
            if not _kept(webhook):
                continue
            path = webhook["clientConfig"]["service"]["path"]
            served = {
                **webhook,
                "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle},
            }
            if any(rule.get("apiGroups") == [""] for rule in webhook.get("rules", [])):
                served["namespaceSelector"] = selector
            webhooks.append(served)
        result.append(
            {
                "apiVersion": document["apiVersion"],
                "kind": document["kind"],
                "metadata": {"name": f"{WEBHOOK_BASE_NAME}-{kind}-webhook-configuration"},
                "webhooks": webhooks,
            }
        )
    return result


def manager_configuration(workdir: Path, webhook_port: int, health_port: int) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for one loopback manager."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {
            "host": "127.0.0.1",
            "port": webhook_port,
            "certDir": str(workdir / "webhook-certs"),
        },
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "managedJobsNamespaceSelector": {
            "matchLabels": {ENABLED_LABEL[0]: ENABLED_LABEL[1]},
        },
        "integrations": {"frameworks": ["pod"]},
    }


class KueueManager(Server):
    """See the module docstring; `admin` is the plane's admin client."""

    def __init__(self, plane: ControlPlane, directory: Path | None = None) -> None:
        self.plane = plane
        self.directory = directory or find_kueue()
        self.workdir = Path(tempfile.mkdtemp(prefix="sparkk8s-kueue-"))
        self.admin = AdminHttp.from_kubeconfig(plane.admin_kubeconfig)
        self.webhook_port = free_port()
        self.health_port = free_port()
        self.startup_seconds: float | None = None
        self._process: ManagedProcess | None = None
        self._webhook_names: list[tuple[str, str]] = []

    # -- lifecycle --

    def start(self) -> Self:
        started = time.monotonic()
        try:
            self._apply_crds()
            self._ensure_namespace(KUEUE_NAMESPACE)
            self._write_certificates()
            self._start_manager()
            self._register_webhooks()
            self._wait_webhooks_answer()
        except BaseException:
            tail = self._process.log_tail() if self._process else ""
            self.stop()
            if tail:
                raise RuntimeError(f"kueue-manager failed to start; log tail:\n{tail}") from None
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def stop(self) -> None:
        for kind, name in self._webhook_names:
            with contextlib.suppress(OSError):
                self.admin.raw("DELETE", f"/apis/admissionregistration.k8s.io/v1/{kind}/{name}")
        self._webhook_names.clear()
        if self._process is not None:
            self._process.stop()
            self._process = None
        self.admin.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def log_path(self) -> Path:
        return self.workdir / "kueue-manager.log"

    def log_tail(self, max_bytes: int = 4000) -> str:
        return self._process.log_tail(max_bytes) if self._process else ""

    def log_lines(self, text: str, last: int = 30) -> str:
        """The manager's last `last` log lines that mention `text` (an object's name)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(line[:800] for line in [ln for ln in lines if text in ln][-last:])

    # -- what tests set up --

    def enable_namespace(self, namespace: str) -> None:
        """Label `namespace` so Kueue's pod webhooks and its manager act on it."""
        patch = {"metadata": {"labels": {ENABLED_LABEL[0]: ENABLED_LABEL[1]}}}
        self.admin.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}",
            json=patch,
            content_type="application/merge-patch+json",
        )

    def create_queues(
        self,
        namespace: str,
        local_queue: str,
        *,
        cluster_queue: str,
        quota: dict[str, str],
        flavor: str = "default-flavor",
    ) -> None:
        """A ResourceFlavor, a ClusterQueue with `quota` (resource -> nominal quota) in that
        flavor, open to `namespace`, and the LocalQueue `local_queue` pointing at it."""
        self._create(
            f"{API}/resourceflavors", {"metadata": {"name": flavor}, "spec": {}}, "ResourceFlavor"
        )
        self._create(
            f"{API}/clusterqueues",
            {
                "metadata": {"name": cluster_queue},
                "spec": {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": namespace}
                    },
                    "resourceGroups": [
                        {
                            "coveredResources": list(quota),
                            "flavors": [
                                {
                                    "name": flavor,
                                    "resources": [
                                        {"name": name, "nominalQuota": amount}
                                        for name, amount in quota.items()
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
            "ClusterQueue",
        )
        self._create(
            f"{API}/namespaces/{namespace}/localqueues",
            {"metadata": {"name": local_queue}, "spec": {"clusterQueue": cluster_queue}},
            "LocalQueue",
        )
        wait_until(
            lambda: _condition(
                self.admin.json("GET", f"{API}/namespaces/{namespace}/localqueues/{local_queue}"),
                "Active",
            ),
            30,
            f"LocalQueue {namespace}/{local_queue} Active",
            watch=[self._process] if self._process else None,
        )

    def delete_cluster_queue(self, name: str) -> None:
        self.admin.raw("DELETE", f"{API}/clusterqueues/{name}")

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        items = self.admin.json("GET", f"{API}/namespaces/{namespace}/workloads")["items"]
        return list(items)

    # -- start-up steps --

    def _create(self, path: str, body: dict[str, Any], kind: str | None = None) -> None:
        if kind is not None:
            body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, **body}
        try:
            self.admin.json("POST", path, body)
        except AdminHttpError as error:
            if error.status != 409:
                raise

    def _apply_crds(self) -> None:
        names = []
        for crd_file in sorted((self.directory / "crd").glob("*.yaml")):
            crd = yaml.safe_load(crd_file.read_text())
            names.append(crd["metadata"]["name"])
            self._create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        for name in names:
            wait_until(
                lambda name=name: _condition(  # type: ignore[misc]
                    self.admin.json(
                        "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                    ),
                    "Established",
                ),
                30,
                f"CRD {name} Established",
            )

    def _ensure_namespace(self, name: str) -> None:
        self._create("/api/v1/namespaces", {"metadata": {"name": name}})

    def _write_certificates(self) -> None:
        pki = self.plane._pki_files
        webhook_dir = self.workdir / "webhook-certs"
        metrics_dir = self.workdir / "etc-kueue" / "metrics" / "certs"
        for directory in (webhook_dir, metrics_dir):
            directory.mkdir(parents=True)
            issue_from_ca(
                pki,
                directory / "tls.crt",
                directory / "tls.key",
                "kueue-webhook",
                server_names=["127.0.0.1"],
            )

    def _start_manager(self) -> None:
        config_file = self.workdir / "config.yaml"
        config_file.write_text(
            json.dumps(manager_configuration(self.workdir, self.webhook_port, self.health_port))
        )
        manager = [
            str(self.directory / "kueue-manager"),
            f"--config={config_file}",
            f"--kubeconfig={self.plane.admin_kubeconfig}",
            # The visibility API server reads its certificate from the fixed path /visibility
            # and is an aggregated API the tests do not use.
            "--feature-gates=VisibilityOnDemand=false",
            "--zap-log-level=info",
        ]
        overlay = self.workdir / "overlay"
        overlay.mkdir()
        layer = shlex.quote(str(overlay))
        metrics = shlex.quote(str(self.workdir / "etc-kueue" / "metrics" / "certs"))
        # /etc as an overlay in this process's own mount namespace: the metrics certificate
        # appears at the path Kueue reads, and this machine's /etc stays as it is.
        overlay_options = f"lowerdir=/etc,upperdir={layer}/upper,workdir={layer}/work"
        copy = f"cp {metrics}/tls.crt {metrics}/tls.key /etc/kueue/metrics/certs/"
        script = " && ".join(
            [
                f"mount -t tmpfs tmpfs {layer}",
                f"mkdir {layer}/upper {layer}/work",
                f"mount -t overlay overlay -o {overlay_options} /etc",
                "mkdir -p /etc/kueue/metrics/certs",
                copy,
                "exec " + shlex.join(manager),
            ]
        )
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        self._process = ManagedProcess("kueue-manager", argv, self.log_path)
        self._process.start()
        wait_until(
            lambda: _http_ok(f"http://127.0.0.1:{self.health_port}/readyz"),
            STARTUP_TIMEOUT_SECONDS,
            "kueue-manager /readyz",
            watch=[self._process],
        )

    def _register_webhooks(self) -> None:
        ca_bundle = base64.b64encode(self.plane.ca_file.read_bytes()).decode()
        for configuration in webhook_configurations(self.webhook_port, ca_bundle):
            kind = configuration["kind"].lower() + "s"
            name = configuration["metadata"]["name"]
            self._webhook_names.append((kind, name))
            self.admin.raw("DELETE", f"/apis/admissionregistration.k8s.io/v1/{kind}/{name}")
            self.admin.json("POST", f"/apis/admissionregistration.k8s.io/v1/{kind}", configuration)

    def _wait_webhooks_answer(self) -> None:
        """A ResourceFlavor dry-run goes through Kueue's own webhooks: once it passes, the
        API server reaches the webhook server with the test CA."""
        probe = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "sparkk8s-webhook-probe"},
            "spec": {},
        }

        def answered() -> bool:
            status, _ = self.admin.raw("POST", f"{API}/resourceflavors?dryRun=All", probe)
            return status == 201

        watched = [self._process] if self._process else None
        wait_until(answered, 60, "Kueue's webhooks answering", watch=watched)


def _condition(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as answer:
        return bool(answer.status == 200)
