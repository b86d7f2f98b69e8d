"""Real Spark on the real node's plane (testenv/realnode): the documented identities, the conf
every real-Spark test starts from, and a recorder of what happened to the pods.

Every real-Spark test submits as the `airflow` service account bound to the documented
submitter Role, and its driver runs as `spark` with the documented driver Role
(docs/rbac.yaml, applied by testenv/rbac.py): never an admin identity.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.rbac import DRIVER_SERVICE_ACCOUNT, apply_documented_rbac
from testenv.runtime_image import EXAMPLES, IMAGE_NAME

SUBMITTER = "airflow"
PI = f"local://{EXAMPLES}/pi.py"
FAIL = f"local://{EXAMPLES}/fail.py"
# Small JVMs: 2 cores run the driver and both executors at once.
BASE_CONF = {
    "spark.kubernetes.container.image": IMAGE_NAME,
    "spark.kubernetes.authenticate.driver.serviceAccountName": DRIVER_SERVICE_ACCOUNT,
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.executor.instances": "2",
}
SUBMIT = Path(sys.executable).with_name("sparkk8s-submit")
# "<run>: <phase>" -> seconds since the submission; printed at the end of the session.
REAL_SPARK_TIMINGS: dict[str, float] = {}
_LOG_TIME = re.compile(r"^(\S+Z) ")


def submitter_kubeconfig(
    plane: ControlPlane, namespace: str, path: Path, also: tuple[str, ...] = ()
) -> Path:
    """Applies docs/rbac.yaml in `namespace` and the namespaces `also` (as the cluster's
    administrator would) and writes a kubeconfig for the submitter's token."""
    admin = AdminHttp.from_kubeconfig(plane.admin_kubeconfig)
    apply_documented_rbac(admin, namespace, SUBMITTER)
    for other in also:
        apply_documented_rbac(admin, other, SUBMITTER, submitter_namespace=namespace)
    token = plane.request_token(namespace, SUBMITTER, expiration_seconds=7200)
    return plane.write_kubeconfig(path, namespace, token=token)


def submit_with_cli(
    plane: ControlPlane,
    namespace: str,
    kubeconfig: Path,
    name: str,
    app: list[str],
    conf: Mapping[str, str] | None = None,
    options: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Runs the `sparkk8s-submit` command (cluster mode, waiting for the end) as the user
    whose `kubeconfig` is given, with BASE_CONF and `conf` on top; `options`: more of the
    command's own (`--policy FILE`)."""
    every = {**BASE_CONF, "spark.kubernetes.namespace": namespace, **(conf or {})}
    argv = [str(SUBMIT), "--master", f"k8s://{plane.server}", "--deploy-mode", "cluster",
            "--name", name, *options]  # fmt: skip
    for key, value in every.items():
        argv += ["--conf", f"{key}={value}"]
    return subprocess.run(
        [*argv, *app],
        env={
            "KUBECONFIG": str(kubeconfig),
            "PATH": "/usr/bin:/bin",
            "HOME": str(kubeconfig.parent),
            # The checkout under test, not whichever one the venv's editable install names.
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        },
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


def driver_log(api: ApiClient, namespace: str, driver: str) -> str:
    """The whole log of the driver pod `driver`, each line with its time."""
    with kube.session(api) as client:
        response = client.get(
            f"/api/v1/namespaces/{namespace}/pods/{driver}/log", params={"timestamps": "true"}
        )
    assert response.status_code == 200, response.text
    return str(response.text)


@dataclass
class PodEvent:
    seconds: float  # since the recorder started
    name: str
    role: str | None
    phase: str | None
    kind: str  # ADDED, MODIFIED, DELETED


# The real node has the machine's 2 CPUs: Spark's default request (1 per pod) would leave an
# executor Pending there.
SMALL_PODS = {
    "spark.kubernetes.driver.request.cores": "200m",
    "spark.kubernetes.executor.request.cores": "200m",
}


@dataclass
class PodRecorder:
    """Watches a namespace's pods from a thread (as admin: an observer, not a participant)
    and keeps every change of the pods created after `start()`, with its time since then;
    with `label_selector`, of the pods it selects only."""

    plane: ControlPlane
    namespace: str
    label_selector: str | None = None
    events: list[PodEvent] = field(default_factory=list)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # last seen, by name
    # The address each pod was given, by name: a status written after its sandbox went may
    # no longer hold it.
    pod_ips: dict[str, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _started: float = 0.0
    _before: set[str] = field(default_factory=set)  # pods that existed at start()

    def start(self) -> PodRecorder:
        self._started = time.monotonic()
        client = KubeClient(kubeconfig_settings(str(self.plane.admin_kubeconfig)))
        listed = client.request("GET", self._path, params=self._selected({}))
        self._before = {p["metadata"]["name"] for p in listed["items"]}
        version = listed["metadata"]["resourceVersion"]
        threading.Thread(target=self._run, args=(client, version), daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def _path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def _selected(self, params: dict[str, str]) -> dict[str, str]:
        return {**params, "labelSelector": self.label_selector} if self.label_selector else params

    def _run(self, client: KubeClient, version: str) -> None:
        while not self._stop.is_set():
            try:
                params = self._selected({"timeoutSeconds": "5", "resourceVersion": version})
                for event in client.watch(self._path, params):
                    if event.get("type") == "ERROR":
                        listed = client.request("GET", self._path, params=self._selected({}))
                        version = listed["metadata"]["resourceVersion"]
                        break
                    version = event["object"]["metadata"].get("resourceVersion", version)
                    self._record(event)
                    if self._stop.is_set():
                        break
            except Exception:  # noqa: BLE001 - an observer keeps watching
                self._stop.wait(0.2)
        client.close()

    def _record(self, event: dict[str, Any]) -> None:
        pod = event.get("object") or {}
        name = (pod.get("metadata") or {}).get("name")
        if not name or name in self._before or event.get("type") == "BOOKMARK":
            return
        labels = pod["metadata"].get("labels") or {}
        phase = (pod.get("status") or {}).get("phase")
        before = self.pods.get(name)
        self.pods[name] = pod
        if ip := (pod.get("status") or {}).get("podIP"):
            self.pod_ips.setdefault(name, ip)
        if event["type"] == "DELETED" or before is None or before["status"].get("phase") != phase:
            self.events.append(
                PodEvent(
                    time.monotonic() - self._started,
                    name,
                    labels.get("spark-role"),
                    phase,
                    event["type"],
                )
            )

    def first(self, role: str, phase: str) -> PodEvent | None:
        return next((e for e in self.events if e.role == role and e.phase == phase), None)

    def names(self, role: str) -> list[str]:
        return sorted({e.name for e in self.events if e.role == role})

    def reached(self, role: str, phase: str) -> list[str]:
        return sorted({e.name for e in self.events if e.role == role and e.phase == phase})

    def gone(self, name: str) -> bool:
        return any(e.name == name and e.kind == "DELETED" for e in self.events)


def host_folder_conf(path: Path, roles: tuple[str, ...] = ("driver", "executor")) -> dict[str, str]:
    """Spark's keys mounting the host folder `path` at the same path in the pods of `roles`
    (a hostPath volume named `shared`): a real node's pods see only their image's files, as
    in a cluster, where a shared path is a volume every driver and executor mounts."""
    return {
        f"spark.kubernetes.{role}.volumes.hostPath.shared.{key}": value
        for role in roles
        for key, value in (
            ("mount.path", str(path)),
            ("options.path", str(path)),
            ("mount.readOnly", "false"),
        )
    }


def env_value(pod: dict[str, Any], name: str) -> str | None:
    """The value of env var `name` of a pod's first container (None if unset or a ref)."""
    container = pod["spec"]["containers"][0]
    return next((e.get("value") for e in container.get("env") or () if e["name"] == name), None)


def log_time(line: str) -> datetime.datetime | None:
    """The time of a line of a `timestamps=true` pod log."""
    match = _LOG_TIME.match(line)
    if not match:
        return None
    stamp = match.group(1).replace("Z", "")
    return datetime.datetime.fromisoformat(stamp[:26]).replace(tzinfo=datetime.UTC)


def registered_executors(log: str) -> list[tuple[datetime.datetime | None, str]]:
    """(time, executor id) of each `Registered executor` line of a timestamped driver log."""
    found = []
    for line in log.splitlines():
        match = re.search(r"Registered executor .* with ID (\d+)", line)
        if match:
            found.append((log_time(line), match.group(1)))
    return found
