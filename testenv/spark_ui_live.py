"""A live Spark UI behind a real Airflow, on the real node: testenv/airflow_stack.py's four
components with the Spark UI plugin, one DAG (testenv/airflow_dags/spark_ui_live.py)
whose SparkK8sSubmitOperator runs Spark Pi 4.3.0 as the documented submitter, and its
driver held up, its one job RUNNING, until `release()` lets the executor start. The driver
writes its event log into `events_folder(root)` (a hostPath: the node's mount namespace
sees the host's root, /var/lib and /run aside), for a History Server the caller may run.

Used by tests/e2e/test_spark_ui_airflow.py (in the lane's shared Airflow stack) and
benchmarks/bench_spark_ui.py (in its own, `launch_ui_stack`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from kubernetes.client import ApiClient

from testenv.airflow_dags.spark_ui_live import (
    CONN_ID,
    DAG_ID,
    EVENTS_HOST_PATH_KEY,
    RELEASE_LABEL,
    TASK_ID,
)
from testenv.airflow_stack import AirflowStack, launch_stack, plugin_installed
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import SUBMITTER, submitter_kubeconfig

REPO = Path(__file__).resolve().parents[1]
NODE = "/api/v1/nodes/real-node-0"


@dataclass
class LiveRun:
    stack: AirflowStack
    namespace: str
    run_id: str
    admin: ApiClient
    token: str  # the admin's JWT, as the UI's `_token` cookie carries it
    base: str = ""  # the task instance's Spark UI path under Airflow
    live_application_id: str = ""  # read from the driver's REST API while it ran
    timings: dict[str, float] = field(default_factory=dict)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(
            self.stack.base_url + path, cookies={"_token": self.token}, timeout=60, **kwargs
        )

    def head(self, path: str) -> httpx.Response:
        return httpx.head(self.stack.base_url + path, cookies={"_token": self.token}, timeout=60)

    def application_id(self) -> str:
        (application,) = self.get(self.base + "/api/v1/applications").json()
        return str(application["id"])

    def driver_pod(self) -> dict[str, Any]:
        pods = f"/api/v1/namespaces/{self.namespace}/pods"
        (driver,) = kube.request(
            self.admin, "GET", pods, params={"labelSelector": "spark-role=driver"}
        )["items"]
        return dict(driver)

    def release(self) -> None:
        """Label the node so the executor may start: the job runs and the driver ends."""
        _label_node(self.admin, "go")


def _grant_pod_proxy(api: ApiClient, namespace: str) -> None:
    """What docs/rbac.yaml asks of a deployment that serves the UI through Airflow: `get`
    on pods/proxy for the connection's identity (here the submitter's, as one connection)."""
    name = "sparkk8s-spark-ui"
    role = {
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]}],
    }
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": SUBMITTER, "namespace": namespace}],
    }
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    kube.request(api, "POST", f"{rbac}/roles", role)
    kube.request(api, "POST", f"{rbac}/rolebindings", binding)


def _label_node(api: ApiClient, value: str | None) -> None:
    patch = {"metadata": {"labels": {RELEASE_LABEL: value}}}
    kube.request(api, "PATCH", NODE, patch, content_type="application/merge-patch+json")


def _delete_pods_and_wait(api: ApiClient, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    for pod in kube.request(api, "GET", pods)["items"]:
        if not pod["metadata"].get("deletionTimestamp"):
            kube.request(api, "DELETE", f"{pods}/{pod['metadata']['name']}")
    wait_for(lambda: not kube.request(api, "GET", pods)["items"], 90, f"{namespace}'s pods gone")


def events_folder(root: Path) -> Path:
    """The run's event log folder on the host: the driver pod's hostPath volume. The
    driver runs as uid 185, so everyone may write it (its files are Spark's own 770)."""
    folder = root / "events"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o777)
    return folder


def launch_ui_stack(root: Path) -> AirflowStack:
    """Airflow with the one DAG, booting (call before the node is needed: they overlap)."""
    dags = root / "dags"
    dags.mkdir()
    link_dag(dags)
    return launch_stack(root / "home", dags, extra_env=plugin_environment(root))


def link_dag(dags: Path) -> None:
    """The live DAG in a stack's DAG folder."""
    (dags / "spark_ui_live.py").symlink_to(REPO / "testenv/airflow_dags/spark_ui_live.py")


def plugin_environment(root: Path) -> dict[str, str]:
    """What a stack needs to load the Spark UI plugin: nothing when the venv's install
    declares its entry point; else a plugins folder (under `root`) that imports it."""
    if plugin_installed():
        return {}
    plugins = root / "plugins"
    plugins.mkdir()
    (plugins / "sparkk8s_spark_ui.py").write_text(
        "from airflow_provider_sparkk8s.plugins.spark_ui import SparkK8sUiPlugin  # noqa\n"
    )
    return {"AIRFLOW__CORE__PLUGINS_FOLDER": str(plugins)}


@contextmanager
def live_spark_ui(
    stack: AirflowStack,
    plane: ControlPlane,
    admin: ApiClient,
    namespace: str,
    root: Path,
    history_server_url: str | None = None,
) -> Iterator[LiveRun]:
    """The DAG run, its driver's UI answering through Airflow; on exit the node's label
    goes and the namespace's pods are gone (the stack is the caller's). With `history_server_url`,
    the connection names that History Server (the plugin's fallback, the run summary)."""
    started = time.monotonic()
    try:
        kubeconfig = submitter_kubeconfig(plane, namespace, root / "submitter.kubeconfig")
        _grant_pod_proxy(admin, namespace)
        stack.wait_healthy(timeout=300)
        extra = {"kube_config_path": str(kubeconfig), "namespace": namespace}
        if history_server_url is not None:
            extra["history_server_url"] = history_server_url
        stack.put_connection(CONN_ID, "spark_k8s", extra=json.dumps(extra))
        with stack.client() as client:
            stack.wait_dag(client, DAG_ID)
            triggered = time.monotonic()
            events = {EVENTS_HOST_PATH_KEY: str(events_folder(root))}
            run_id = stack.trigger(client, DAG_ID, conf=events)
        run = LiveRun(stack, namespace, run_id, admin, stack.token())
        run.timings["Airflow up"] = triggered - started
        run.base = _published_base(run)
        # The driver's REST API through the api-server: the UI is up.
        wait_for(lambda: _listed(run), 300, "the driver's REST API through Airflow", 1.0)
        # Spark submits the job once it gives up waiting for executors (30 s on Kubernetes).
        wait_for(lambda: _running_jobs(run), 180, "the Pi job to be listed", 1.0)
        run.live_application_id = run.application_id()
        run.timings["trigger -> UI through Airflow"] = time.monotonic() - triggered
        yield run
    finally:
        try:
            _label_node(admin, None)
        finally:
            _delete_pods_and_wait(admin, namespace)


def _published_base(run: LiveRun) -> str:
    """The Spark UI link's path, once the operator has published it (while it is deferred)."""
    links = f"/api/v2/dags/{DAG_ID}/dagRuns/{run.run_id}/taskInstances/{TASK_ID}/links"
    auth = {"Authorization": f"Bearer {run.token}"}

    def published() -> str | None:
        run.stack.check_alive()
        answer = httpx.get(run.stack.base_url + links, headers=auth, timeout=60)
        if answer.status_code != 200:
            return None
        body = answer.json()
        url = body.get("extra_links", body).get("Spark UI")
        return url or None

    url = str(wait_for(published, 300, "the task's Spark UI link", 1.0))
    assert url.startswith(run.stack.base_url + "/sparkk8s/ui/"), url
    return url[len(run.stack.base_url) :].rstrip("/")


def _listed(run: LiveRun) -> list[Any] | None:
    run.stack.check_alive()
    answer = run.get(run.base + "/api/v1/applications")
    if answer.status_code != 200 or "json" not in answer.headers.get("content-type", ""):
        return None
    return list(answer.json()) or None


def _running_jobs(run: LiveRun) -> list[Any] | None:
    listed = run.get(f"{run.base}/api/v1/applications/{run.application_id()}/jobs").json()
    return [job for job in listed if job["status"] == "RUNNING"] or None
