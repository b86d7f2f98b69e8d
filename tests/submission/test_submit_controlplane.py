"""Submissions against the real API server: what it stored, owner references, garbage
collection, the CLI waiting on KWOK-driven pods, and --kill / --status with globs."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from kubernetes import client as k8s_client

from airflow_provider_sparkk8s.cli.submit import run
from tests.parity.scenarios import SCENARIO_DIR, load
from tests.support.waiting import wait_for

pytestmark = pytest.mark.controlplane

# A spread over the feature steps: templates with side-cars, every volume type incl. an
# OnDemand PVC, Hadoop and Kerberos objects, shipped credentials, secrets, env, Python.
REPRESENTATIVE = [
    "jvm-sparkpi",
    "pod-templates",
    "volumes-basic",
    "volumes-pvc-ondemand",
    "hadoop-conf-dir",
    "kerberos-krb5-keytab",
    "driver-credentials",
    "secrets",
    "pyspark-python-env",
    "labels-annotations",
]
FAST = {"spark.kubernetes.driver.annotation.kwok.sparkk8s.io/run-ms": "300"}


def submit_argv(server: str, namespace: str, conf: dict[str, str], tail: list[str]) -> list[str]:
    argv = ["--master", f"k8s://{server}", "--deploy-mode", "cluster"]
    for key, value in {
        "spark.kubernetes.container.image": "apache/spark:4.0.0",
        **conf,
        "spark.kubernetes.namespace": namespace,
    }.items():
        argv += ["--conf", f"{key}={value}"]
    return argv + tail


def cli(argv: list[str], kubeconfig: Path, env: dict[str, str] | None = None):
    out, err = io.StringIO(), io.StringIO()
    environ = {"KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent), **(env or {})}
    outcome = run(argv, environ=environ, out=out, err=err)
    return outcome, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_stored_objects_are_owned_and_defaulted(
    name: str, control_plane, namespace: str, kubeconfig: Path, kube_admin
) -> None:
    scenario = load(SCENARIO_DIR / f"{name}.yaml")
    core = k8s_client.CoreV1Api(kube_admin)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        scenario.materialise(tmp)
        argv = scenario.argv(f"k8s://{control_plane.server}", tmp)
        argv += ["--conf", f"spark.kubernetes.namespace={namespace}"]
        argv = _before_resource(argv, scenario)
        outcome, _, err = cli(argv, kubeconfig, scenario.environment(tmp))
    assert outcome.exit_code == 0, err
    pods = core.list_namespaced_pod(namespace, label_selector="spark-role=driver").items
    assert len(pods) == 1
    pod = pods[0]
    # Defaults the API server applied to what we sent.
    assert pod.spec.dns_policy == "ClusterFirst"
    assert pod.spec.service_account_name  # "default" unless the scenario set one
    spark = pod.spec.containers[-1]
    assert spark.termination_message_path == "/dev/termination-log"
    assert pod.spec.restart_policy == "Never"
    owned = [
        *core.list_namespaced_config_map(namespace).items,
        *core.list_namespaced_service(namespace).items,
        *core.list_namespaced_secret(namespace).items,
        *core.list_namespaced_persistent_volume_claim(namespace).items,
    ]
    owned = [o for o in owned if o.metadata.owner_references]
    assert any(o.metadata.name.endswith("-conf-map") for o in owned)
    for obj in owned:
        (owner,) = obj.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "Pod", pod.metadata.name, pod.metadata.uid, True,
        )  # fmt: skip
        managers = {entry.manager for entry in obj.metadata.managed_fields or []}
        assert "sparkk8s" in managers
    service = next(o for o in owned if isinstance(o, k8s_client.V1Service))
    assert service.spec.cluster_ip == "None"


def _before_resource(argv: list[str], scenario) -> list[str]:
    """Move the trailing --conf we added in front of the primary resource."""
    extra = argv[-2:]
    start = len(argv) - 2 - len(scenario.args)
    return [*argv[:start], *extra, *argv[start:-2]]


def test_deleting_the_driver_collects_everything(
    control_plane, namespace: str, kubeconfig: Path, kube_admin
) -> None:
    core = k8s_client.CoreV1Api(kube_admin)
    argv = submit_argv(
        control_plane.server,
        namespace,
        {**FAST, "spark.kubernetes.submission.waitAppCompletion": "false"},
        ["--name", "gc-me", "--class", "M", "local:///opt/app.jar"],
    )
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 0, err
    (pod,) = core.list_namespaced_pod(namespace).items
    assert core.list_namespaced_service(namespace).items
    core.delete_namespaced_pod(pod.metadata.name, namespace)

    def all_collected() -> bool:
        maps = [
            m for m in core.list_namespaced_config_map(namespace).items
            if m.metadata.name != "kube-root-ca.crt"
        ]  # fmt: skip
        return not maps and not core.list_namespaced_service(namespace).items
    wait_for(all_collected, 60, "the garbage collector to remove the owned objects")


def test_cli_waits_and_exits_zero_on_success(
    control_plane, namespace: str, kubeconfig: Path
) -> None:
    argv = submit_argv(
        control_plane.server, namespace, FAST,
        ["--name", "waits", "--class", "M", "local:///opt/app.jar"],
    )  # fmt: skip
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 0, err
    assert outcome.state is not None and outcome.state.state == "succeeded"
    assert "succeeded" in err


def test_cli_exits_non_zero_when_the_driver_fails(
    control_plane, namespace: str, kubeconfig: Path
) -> None:
    conf = {**FAST, "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/exit-code": "3"}
    argv = submit_argv(
        control_plane.server, namespace, conf,
        ["--name", "fails", "--class", "M", "local:///opt/app.jar"],
    )  # fmt: skip
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 1, err
    assert outcome.state is not None and outcome.state.state == "failed"
    assert outcome.state.exit_code == 3


def test_kill_and_status_with_globs(control_plane, namespace: str, kubeconfig: Path, kube_admin):
    core = k8s_client.CoreV1Api(kube_admin)
    hold = {
        "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
        "spark.kubernetes.submission.waitAppCompletion": "false",
    }
    for name in ("alpha-job", "alpha-job", "beta-job"):
        argv = submit_argv(
            control_plane.server, namespace, hold, ["--name", name, "--class", "M", "local:///a.jar"]
        )
        assert cli(argv, kubeconfig)[0].exit_code == 0
    base = ["--master", f"k8s://{control_plane.server}"]
    outcome, out, _ = cli([*base, "--status", f"{namespace}:alpha-job-*"], kubeconfig)
    assert outcome.exit_code == 0 and out.count(f"{namespace}:alpha-job-") == 2
    outcome, out, _ = cli([*base, "--kill", f"{namespace}:alpha-*"], kubeconfig)
    assert outcome.exit_code == 0 and out.count("Deleting driver pod") == 2

    def only_beta_left() -> bool:
        names = [p.metadata.name for p in core.list_namespaced_pod(namespace).items]
        return len(names) == 1 and names[0].startswith("beta-job-")
    wait_for(only_beta_left, 60, "the killed drivers to go")
    outcome, out, _ = cli([*base, "--kill", f"{namespace}:nothing-*"], kubeconfig)
    assert outcome.exit_code == 1 and "No applications found." in out
