"""RBAC proven minimal (issue 44 item 5): each verb of docs/rbac.yaml's submitter Role is
taken away in turn, and the provider's features run, in a fresh namespace, as the `airflow`
service account bound to what is left, until one fails; what it showed its user (the CLI's
error line, the task log's warning) must name the missing permission. A verb whose removal
breaks nothing would be a finding (it goes from the Role). Every row of docs/rbac.md's table
is this test's observation: it fails when the table differs, and `SPARKK8S_WRITE_RBAC_TABLE=1`
writes the table it saw.

The features, through the product's own code as a user drives them, in this order:
sparkk8s-submit (a 4.2.1 submission with its secret confs Secret and NetworkPolicy, waiting
for the end), --status, the operator's log tail, the worker-side wait (list then watch),
adoption by a later try (its conf ConfigMap read, the adoption mark), the result record
(kept, read by a later try, dropped), --kill, and a submission rolled back (a ResourceQuota
refuses its last object). KWOK runs the driver: 1.5 s, then Succeeded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.follower import FollowSpec
from airflow_provider_sparkk8s.application.following.tracked import tracked_from_pod
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.errors import SparkK8sError
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.following.follow_runs import follow_application
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.task import completion, result_delivery
from airflow_provider_sparkk8s.submission.kueue import QUEUE_NAME_KEY, QUEUE_TIMEOUT_KEY
from airflow_provider_sparkk8s.submission.secret_confs import ENABLED_KEY
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.harness.waiting import wait_for
from testenv.kueue import API as KUEUE_API
from testenv.kueue import KueueManager
from testenv.rbac import SUBMITTER_ROLE, apply_objects, documented_objects, rule_verbs, without
from tests.support.kueue import LOCAL_QUEUE, kueue_manager  # noqa: F401

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(1200)]

SUBMITTER = "airflow"
SUBMIT = Path(sys.executable).with_name("sparkk8s-submit")
RBAC_MD = Path(__file__).resolve().parents[3] / "docs" / "rbac.md"
TABLE_START = "<!-- rbac-table: written by tests/services/cluster_access/test_rbac_minimal_controlplane.py -->"
TABLE_END = "<!-- /rbac-table -->"
KUEUE_ROLE = f"{SUBMITTER_ROLE}-kueue"


class Recorded:
    """A task log: the warnings a feature wrote (what its user sees)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def info(self, msg: str, *args: Any) -> None: ...

    def warning(self, msg: str, *args: Any) -> None:
        self.warnings.append(msg % args if args else msg)


@dataclass
class Scene:
    """One namespace with the submitter's Roles as the case leaves them."""

    plane: ControlPlane
    admin: AdminHttp
    namespace: str
    kubeconfig: Path
    driver: str = ""
    app_id: str = ""
    kueue: KueueManager | None = None

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SUBMIT), *args],
            env={
                "KUBECONFIG": str(self.kubeconfig),
                "PATH": "/usr/bin:/bin",
                "HOME": str(self.kubeconfig.parent),
                **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def client(self) -> KubeClient:
        return KubeClient(kubeconfig_settings(str(self.kubeconfig)), RetryPolicy(attempts=1))


def _cli_error(done: subprocess.CompletedProcess[str]) -> str | None:
    """None on exit 0, else the CLI's own error line (or its last line)."""
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    ours = [line for line in lines if line.startswith("sparkk8s-submit:")]
    return (ours or lines or [f"exit {done.returncode}"])[-1]


def _submit_argv(scene: Scene, name: str, *conf: str) -> list[str]:
    argv = ["--master", f"k8s://{scene.plane.server}", "--deploy-mode", "cluster",
            "--name", name]  # fmt: skip
    for item in (
        "spark.kubernetes.container.image=apache/spark:4.2.1",  # the NetworkPolicy step
        f"spark.kubernetes.namespace={scene.namespace}",
        f"{ENABLED_KEY}=true",  # the secret confs' Secret
        "spark.hadoop.fs.s3a.secret.key=rbac-minimal-1",
        *conf,
    ):
        argv += ["--conf", item]
    return [*argv, "--class", "org.example.Main", "local:///opt/app.jar"]


# --------------------------------------------------------------------------- the features


def submit_and_wait(scene: Scene) -> str | None:
    done = scene.cli(*_submit_argv(scene, "rbac"))
    found = re.search(r"submission ID (\S+):(\S+) into Kubernetes", done.stderr)
    if found:
        scene.driver = found.group(2)
    if (error := _cli_error(done)) is not None:
        return error
    assert "finished: succeeded" in done.stderr, done.stderr
    return None


def status(scene: Scene) -> str | None:
    done = scene.cli("--status", f"{scene.namespace}:{scene.driver}",
                     "--master", f"k8s://{scene.plane.server}")  # fmt: skip
    if (error := _cli_error(done)) is not None:
        return error
    assert "succeeded" in done.stdout, done
    return None


def driver_log(scene: Scene) -> str | None:
    log = Recorded()
    with DriverPods(scene.client(), owns_client=True) as pods:
        pod = pods.get(scene.namespace, scene.driver)
        assert pod is not None
        app = tracked_from_pod(pod, adopted=False)
        scene.app_id = app.application_id
        completion.log_driver_tail(pods, app, 5, log)
    return log.warnings[0] if log.warnings else None


def worker_wait(scene: Scene) -> str | None:
    with DriverPods(scene.client(), owns_client=True) as pods:
        pod = pods.get(scene.namespace, scene.driver)
        assert pod is not None
        spec = FollowSpec(scene.app_id, scene.namespace, scene.driver)
        try:
            step = follow_application(pods, spec, window_seconds=5)
        except SparkK8sError as error:
            return str(error)
    assert step.final is not None and step.final["state"] == "succeeded", step
    return None


def adoption(scene: Scene) -> str | None:
    with DriverPods(scene.client(), owns_client=True) as pods:
        pod = pods.get(scene.namespace, scene.driver)
        assert pod is not None
        try:
            assert pods.driver_properties(pod) is not None
            assert pods.claim(pod, 2) is not None
        except SparkK8sError as error:
            return str(error)
    return None


def result_record(scene: Scene) -> str | None:
    log = Recorded()
    first = TaskInstanceRef("rbac", "pi", "manual__1", try_number=1, clear_number=0)
    later = TaskInstanceRef("rbac", "pi", "manual__1", try_number=2, clear_number=0)
    application = {"application_id": scene.app_id, "state": "succeeded"}
    with DriverPods(scene.client(), owns_client=True) as pods:
        kept = result_delivery.keep_result(
            pods, first, scene.namespace, application, {"state": "succeeded"}, log
        )
        found = result_delivery.kept_result(pods, later, scene.namespace, log)
        result_delivery.drop_result(pods, later, scene.namespace, log)
    if log.warnings:
        return log.warnings[0]
    assert kept and found is not None
    return None


def kill(scene: Scene) -> str | None:
    done = scene.cli("--kill", f"{scene.namespace}:{scene.driver}",
                     "--master", f"k8s://{scene.plane.server}")  # fmt: skip
    return _cli_error(done)


def roll_back(scene: Scene, *conf: str) -> str | None:
    """A ResourceQuota with room for no more ConfigMaps refuses the submission's last object
    (its conf ConfigMap): the submission rolls back what it had created."""
    configmaps = f"/api/v1/namespaces/{scene.namespace}/configmaps"
    path = f"/api/v1/namespaces/{scene.namespace}/resourcequotas"

    def names() -> list[str]:
        return [c["metadata"]["name"] for c in scene.admin.json("GET", configmaps)["items"]]

    # The killed driver's conf ConfigMap goes with it (the garbage collector): wait, so the
    # quota's count is the namespace's own.
    wait_for(lambda: names() == ["kube-root-ca.crt"], 60, "only kube-root-ca.crt left")
    quota = {"metadata": {"name": "no-more-configmaps"},
             "spec": {"hard": {"count/configmaps": "1"}}}  # fmt: skip
    scene.admin.request("POST", path, json=quota)
    wait_for(
        lambda: (
            (
                (scene.admin.json("GET", f"{path}/no-more-configmaps").get("status") or {}).get(
                    "used"
                )
                or {}
            ).get("count/configmaps")
            == "1"
        ),
        30,
        "the quota's usage counted",
    )
    try:
        done = scene.cli(
            *_submit_argv(
                scene, "rolled", "spark.kubernetes.submission.waitAppCompletion=false", *conf
            )
        )
    finally:
        scene.admin.request("DELETE", f"{path}/no-more-configmaps")
    error = _cli_error(done)
    assert error is not None and "exceeded quota" in error, done.stderr
    return error if "could NOT remove" in error else None


def queued(scene: Scene) -> str | None:
    """Kueue admission: a submission through a LocalQueue whose ClusterQueue has no room
    for it, followed by sparkk8s-submit until its queue timeout (the Workload and its
    LocalQueue read while it waits), which deletes the driver and its Workload."""
    cluster_queue = f"cq-{scene.namespace}"
    assert scene.kueue is not None
    scene.kueue.enable_namespace(scene.namespace)
    scene.kueue.create_queues(scene.namespace, LOCAL_QUEUE, cluster_queue=cluster_queue,
                              quota={"cpu": "100m", "memory": "100Mi"})  # fmt: skip
    done = scene.cli(
        *_submit_argv(scene, "rbac", f"{QUEUE_NAME_KEY}={LOCAL_QUEUE}",
                      f"{QUEUE_TIMEOUT_KEY}=8s"),
    )  # fmt: skip
    lines = done.stderr.splitlines()
    said = [line for line in lines if line.startswith(("WARNING", "sparkk8s-submit:"))]
    if said:
        return said[0]
    # It cannot be admitted: its queue timeout ends it (exit 4, infrastructure).
    assert done.returncode == 4, done.stderr
    assert f"queued in ClusterQueue {cluster_queue}" in done.stderr, done.stderr
    workloads = f"{KUEUE_API}/namespaces/{scene.namespace}/workloads"
    # Deleted with the driver; Kueue's finalizer holds it until the pod is gone.
    wait_for(lambda: scene.admin.json("GET", workloads)["items"] == [], 30, "the Workload gone")
    return None


def queued_roll_back(scene: Scene) -> str | None:
    """The same refusal of a submission through Kueue (after `queued` made its queues)."""
    return roll_back(scene, f"{QUEUE_NAME_KEY}={LOCAL_QUEUE}")


FEATURES: list[tuple[str, Callable[[Scene], str | None]]] = [
    ("sparkk8s-submit (submit, wait for the end)", submit_and_wait),
    ("sparkk8s-submit --status", status),
    ("the driver log in the task log", driver_log),
    ("the worker-side wait (list, then watch)", worker_wait),
    ("adoption by a later try (conf ConfigMap read, adoption mark)", adoption),
    ("the result record (kept, read by a later try, dropped)", result_record),
    ("sparkk8s-submit --kill", kill),
    ("a submission rolled back (a quota refuses its conf ConfigMap)", roll_back),
]
KUEUE_FEATURES: list[tuple[str, Callable[[Scene], str | None]]] = [
    ("Kueue: a queued submission followed to its queue timeout", queued),
    ("Kueue: a submission rolled back (its Workload applied before the pod)", queued_roll_back),
]


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Row:
    role: str
    rule: str  # "delete services"
    feature: str  # the first feature that failed, or "" (nothing needs it)
    seen: str  # what its user saw


def _open(plane: ControlPlane, admin: AdminHttp, name: str, tmp: Path,
          without_verb: tuple[str, str, str, str] | None = None) -> Scene:  # fmt: skip
    """A fresh namespace with docs/rbac.yaml applied, less `without_verb` ((Role, group,
    resource, verb)); the submitter's kubeconfig."""
    admin.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name}})
    wait_for(
        lambda: admin.raw("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
        30,
        f"service account {name}/default",
    )
    objects = documented_objects(name, SUBMITTER)
    if without_verb is not None:
        objects = without(objects, *without_verb)
    apply_objects(admin, objects, SUBMITTER)
    token = plane.request_token(name, SUBMITTER, expiration_seconds=3600)
    kubeconfig = plane.write_kubeconfig(tmp / f"{name}.kubeconfig", name, token=token)
    return Scene(plane, admin, name, kubeconfig)


def run_features(
    scene: Scene, features: list[tuple[str, Callable[[Scene], str | None]]]
) -> tuple[str, str]:
    """(feature, what its user saw) of the first feature that fails; ("", "") when none."""
    for label, feature in features:
        seen = feature(scene)
        if seen is not None:
            return label, seen
    return "", ""


def _label(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def _short(seen: str, namespace: str) -> str:
    """What the user saw, without the run's own names (namespace, pod, ids)."""
    text = seen.replace(namespace, "NS")
    text = re.sub(r"\brbac-[0-9a-f]{16}-driver\b", "DRIVER", text)
    text = re.sub(r"\b(rbac|rolled)-[0-9a-f]{16}-", r"\1-ID-", text)
    text = re.sub(r"sparkk8s-result-[0-9a-f]+", "sparkk8s-result-DIGEST", text)
    text = re.sub(r"\bspark-drv-[0-9a-f]{16}-", "spark-drv-ID-", text)
    text = re.sub(r"\bspark-[0-9a-f]{32}\b", "APP-ID", text)
    return re.sub(r": User \"system:serviceaccount:NS:airflow\" cannot .*$", "", text)


@pytest.fixture
def namespaces(control_plane: ControlPlane) -> Iterator[tuple[AdminHttp, list[str]]]:
    admin = AdminHttp.from_kubeconfig(control_plane.admin_kubeconfig)
    made: list[str] = []
    yield admin, made
    for name in made:
        admin.raw("DELETE", f"/api/v1/namespaces/{name}")
        admin.raw("DELETE", f"{KUEUE_API}/clusterqueues/cq-{name}")


def test_each_verb_of_the_submitter_roles_is_needed_and_its_absence_named(
    control_plane: ControlPlane,
    kueue_manager: KueueManager,  # noqa: F811
    namespaces: tuple[AdminHttp, list[str]],
    tmp_path: Path,
) -> None:
    admin, made = namespaces
    stamp = format(int(time.time()), "x")[-5:]

    def scene(suffix: str, without_verb: tuple[str, str, str, str] | None = None) -> Scene:
        made.append(f"rbac-{stamp}-{suffix}")
        opened = _open(control_plane, admin, made[-1], tmp_path, without_verb)
        opened.kueue = kueue_manager
        return opened

    # Control: with the whole documented Roles, every feature works.
    assert run_features(scene("all"), FEATURES + KUEUE_FEATURES) == ("", "")

    cases = [
        (role, features, number, rule)
        for role, features in ((SUBMITTER_ROLE, FEATURES), (KUEUE_ROLE, KUEUE_FEATURES))
        for number, rule in enumerate(rule_verbs(role))
    ]

    def one(
        role: str, features: list[tuple[str, Callable[[Scene], str | None]]], number: int,
        rule: tuple[str, str, str],
    ) -> Row:  # fmt: skip
        group, resource, verb = rule
        case = scene(f"{role[-5:]}-{number}", (role, group, resource, verb))
        feature, seen = run_features(case, features)
        if feature:  # what it left behind goes while Kueue's manager still runs
            empty_of_applications(admin, case.namespace)
        return Row(role, f"{verb} {_label(group, resource)}", feature, _short(seen, case.namespace))

    # Each case is a namespace of its own and mostly waits (on its driver, on the CLI): four
    # at a time, the test's call took 32.6 s alone, was 66 s (2026-12-07; rows keep their order).
    with ThreadPoolExecutor(max_workers=4) as pool:
        rows = list(pool.map(lambda case: one(*case), cases))
    table = rbac_table(rows)
    if os.environ.get("SPARKK8S_WRITE_RBAC_TABLE") == "1":
        write_table(table)
    unneeded = [row.rule for row in rows if not row.feature]
    unnamed = [row.rule for row in rows if f"missing permission to {row.rule}" not in row.seen]
    assert (unneeded, unnamed) == ([], []), table
    assert documented_table() == table, table


def empty_of_applications(admin: AdminHttp, namespace: str) -> None:
    admin.raw("DELETE", f"/api/v1/namespaces/{namespace}/pods")
    admin.raw("DELETE", f"{KUEUE_API}/namespaces/{namespace}/workloads")


def rbac_table(rows: list[Row]) -> str:
    lines = ["| Role | without | the first feature that fails | what its user sees |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    for row in rows:
        seen = row.seen.replace("|", "\\|") or "nothing fails"
        lines.append(f"| {row.role} | `{row.rule}` | {row.feature or 'none'} | {seen} |")
    return "\n".join(lines)


def documented_table() -> str:
    text = RBAC_MD.read_text() if RBAC_MD.exists() else ""
    if TABLE_START not in text:
        return ""
    return text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()


def write_table(table: str) -> None:
    text = RBAC_MD.read_text()
    head, rest = text.split(TABLE_START, 1)
    tail = rest.split(TABLE_END, 1)[1]
    RBAC_MD.write_text(f"{head}{TABLE_START}\n{table}\n{TABLE_END}{tail}")
