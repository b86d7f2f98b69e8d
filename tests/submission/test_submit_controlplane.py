"""Submissions against the real API server: what it stored, owner references, garbage
collection, the CLI waiting on KWOK-driven pods, and --kill / --status with globs."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import KubeApiError, SparkConfError
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.harness.waiting import wait_for
from tests.parity.scenarios import SCENARIO_DIR, load

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
# Our own client for set-up and assertions: plain dicts, as the API server stores them.


@pytest.fixture
def admin(control_plane) -> Iterator[KubeClient]:  # type: ignore[no-untyped-def]
    settings = ClientSettings(
        server=control_plane.server,
        ca_file=str(control_plane.ca_file),
        client_cert_file=str(control_plane.admin_cert_file),
        client_key_file=str(control_plane.admin_key_file),
    )
    with KubeClient(settings) as client:
        yield client


@pytest.fixture
def ns(admin: KubeClient) -> Iterator[str]:
    name = f"submit-{secrets.token_hex(4)}"
    admin.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name}})
    wait_for(
        lambda: admin.request(
            "GET", f"/api/v1/namespaces/{name}/serviceaccounts",
            params={"fieldSelector": "metadata.name=default"},
        ).get("items"),
        30, f"service account {name}/default",
    )  # fmt: skip
    yield name
    with contextlib.suppress(KubeApiError):
        admin.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def kubeconfig(control_plane, ns: str, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    return control_plane.write_kubeconfig(tmp_path / "kubeconfig", ns)


def items(admin: KubeClient, ns: str, plural: str, api: str = "/api/v1") -> list[dict]:
    return admin.request("GET", f"{api}/namespaces/{ns}/{plural}").get("items") or []


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


def submit_app(control_plane, ns: str, kubeconfig: Path, conf: dict[str, str], name: str):  # type: ignore[no-untyped-def]
    """sparkk8s-submit of a JVM app named `name` with `conf`: (outcome, stdout, stderr)."""
    argv = submit_argv(
        control_plane.server, ns, conf, ["--name", name, "--class", "M", "local:///opt/app.jar"]
    )
    return cli(argv, kubeconfig)


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_stored_objects_are_owned_and_defaulted(
    name: str, control_plane, ns: str, kubeconfig: Path, admin: KubeClient
) -> None:
    scenario = load(SCENARIO_DIR / f"{name}.yaml")
    # The pod-templates scenario names a service account; admission wants it to exist.
    service_account = {"metadata": {"name": "template-sa"}}
    admin.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", json=service_account)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        scenario.materialise(tmp)
        argv = scenario.argv(f"k8s://{control_plane.server}", tmp)
        # Our namespace goes in front of the primary resource (after it come app args).
        at = len(argv) - len(scenario.args)
        argv = [*argv[:at], "--conf", f"spark.kubernetes.namespace={ns}", *argv[at:]]
        outcome, _, err = cli(argv, kubeconfig, scenario.environment(tmp))
    assert outcome.exit_code == 0, err
    pods = items(admin, ns, "pods")
    assert len(pods) == 1
    pod = pods[0]
    # Defaults the API server applied to what we sent.
    assert pod["spec"]["dnsPolicy"] == "ClusterFirst"
    assert pod["spec"]["serviceAccountName"]  # "default" unless the scenario named one
    assert pod["spec"]["restartPolicy"] == "Never"
    spark = pod["spec"]["containers"][-1]
    assert "driver" in spark["args"]  # Spark's container is last, after any side-cars
    assert spark["terminationMessagePath"] == "/dev/termination-log"
    owned = [
        *items(admin, ns, "configmaps"),
        *items(admin, ns, "services"),
        *items(admin, ns, "secrets"),
        *items(admin, ns, "persistentvolumeclaims"),
        *items(admin, ns, "networkpolicies", "/apis/networking.k8s.io/v1"),
    ]
    owned = [o for o in owned if o["metadata"].get("ownerReferences")]
    assert any(o["metadata"]["name"].endswith("-conf-map") for o in owned)
    for obj in owned:
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner == {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
            "controller": True,
        }
        managers = {entry["manager"] for entry in obj["metadata"].get("managedFields") or []}
        assert managers == {"sparkk8s"}
    (service,) = [o for o in owned if "clusterIP" in o.get("spec", {})]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["sessionAffinity"] == "None"  # server default
    assert any(p["protocol"] == "TCP" for p in service["spec"]["ports"])  # server default


def test_deleting_the_driver_collects_everything(
    control_plane, ns: str, kubeconfig: Path, admin: KubeClient
) -> None:
    argv = submit_argv(
        control_plane.server,
        ns,
        {**FAST, "spark.kubernetes.submission.waitAppCompletion": "false"},
        ["--name", "gc-me", "--class", "M", "local:///opt/app.jar"],
    )
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 0, err
    (pod,) = items(admin, ns, "pods")
    assert items(admin, ns, "services")
    admin.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}")

    def all_collected() -> bool:
        maps = [
            m for m in items(admin, ns, "configmaps")
            if m["metadata"]["name"] != "kube-root-ca.crt"
        ]  # fmt: skip
        policies = items(admin, ns, "networkpolicies", "/apis/networking.k8s.io/v1")
        return not maps and not policies and not items(admin, ns, "services")

    wait_for(all_collected, 60, "the garbage collector to remove the owned objects")


def test_cli_waits_and_exits_zero_on_success(control_plane, ns: str, kubeconfig: Path) -> None:
    outcome, _, err = submit_app(control_plane, ns, kubeconfig, FAST, "waits")
    assert outcome.exit_code == 0, err
    assert outcome.state is not None and outcome.state.state == "succeeded"
    assert "succeeded" in err


def test_cli_prints_the_status_line_every_report_interval(
    control_plane, ns: str, kubeconfig: Path
) -> None:
    conf = {
        "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/run-ms": "1500",
        "spark.kubernetes.report.interval": "200ms",
    }
    outcome, _, err = submit_app(control_plane, ns, kubeconfig, conf, "reports")
    assert outcome.exit_code == 0, err
    status_lines = [line for line in err.splitlines() if "Application status for spark-" in line]
    assert any(line.endswith("(phase: Running)") for line in status_lines), err
    assert len(status_lines) >= 5  # 1.5 s of running at 200 ms


def test_cli_exits_non_zero_when_the_driver_fails(control_plane, ns: str, kubeconfig: Path) -> None:
    conf = {**FAST, "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/exit-code": "3"}
    outcome, _, err = submit_app(control_plane, ns, kubeconfig, conf, "fails")
    assert outcome.exit_code == 1, err
    assert outcome.state is not None and outcome.state.state == "failed"
    assert outcome.state.exit_code == 3


def test_kill_and_status_with_globs(
    control_plane, ns: str, kubeconfig: Path, admin: KubeClient
) -> None:
    hold = {
        "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
        "spark.kubernetes.submission.waitAppCompletion": "false",
    }
    for name in ("alpha-job", "alpha-job", "beta-job"):
        argv = submit_argv(
            control_plane.server, ns, hold, ["--name", name, "--class", "M", "local:///a.jar"]
        )
        assert cli(argv, kubeconfig)[0].exit_code == 0
    base = ["--master", f"k8s://{control_plane.server}"]
    outcome, out, _ = cli([*base, "--status", f"{ns}:alpha-job-*"], kubeconfig)
    assert outcome.exit_code == 0 and out.count(f"{ns}:alpha-job-") == 2
    outcome, out, _ = cli([*base, "--kill", f"{ns}:alpha-*"], kubeconfig)
    assert outcome.exit_code == 0 and out.count("Deleting driver pod") == 2

    def only_beta_left() -> bool:
        names = [p["metadata"]["name"] for p in items(admin, ns, "pods")]
        return len(names) == 1 and names[0].startswith("beta-job-")

    wait_for(only_beta_left, 60, "the killed drivers to go")
    outcome, out, _ = cli([*base, "--kill", f"{ns}:nothing-*"], kubeconfig)
    assert outcome.exit_code == 1 and "No applications found." in out


def test_any_unicode_reaches_the_api_server_intact(
    control_plane, ns: str, kubeconfig: Path, admin: KubeClient
) -> None:
    """4-byte UTF-8 and the characters YAML refuses raw (DEL, C1 controls, U+FFFE) go
    through the server-side apply's YAML decoder and come back as sent."""
    odd = "🚀 𠜎 🛰 del\x7f c1\x80 nel\x85 ls\u2028 nonchar\ufffe é"
    conf = {
        "spark.kubernetes.submission.waitAppCompletion": "false",
        "spark.kubernetes.driver.annotation.note": odd,
        "spark.kubernetes.driver.service.annotation.note": odd,
        "spark.kubernetes.driverEnv.ODD": odd,
        "spark.myapp.odd": odd,
    }
    argv = submit_argv(
        control_plane.server, ns, conf, ["--name", f"uni {odd}", "--class", "M",
                                         "local:///opt/app.jar", odd]
    )  # fmt: skip
    outcome, _, err = cli(argv, kubeconfig)
    assert outcome.exit_code == 0, err
    (pod,) = items(admin, ns, "pods")
    assert pod["metadata"]["annotations"]["note"] == odd
    spark = pod["spec"]["containers"][-1]
    assert spark["args"][-1] == odd
    assert {"name": "ODD", "value": odd} in spark["env"]
    (service,) = items(admin, ns, "services")
    assert service["metadata"]["annotations"]["note"] == odd
    (conf_map,) = [
        m for m in items(admin, ns, "configmaps") if m["metadata"]["name"].endswith("-conf-map")
    ]
    assert f"spark.myapp.odd={odd}" in conf_map["data"]["spark.properties"]


def test_a_conf_too_big_for_the_conf_map_is_refused_naming_the_key(
    control_plane, ns: str, kubeconfig: Path, admin: KubeClient
) -> None:
    conf = {"spark.myapp.blob": "x" * 1_100_000}
    argv = submit_argv(
        control_plane.server, ns, conf, ["--name", "big", "--class", "M", "local:///opt/app.jar"]
    )
    with pytest.raises(SparkConfError) as raised:
        cli(argv, kubeconfig)
    assert raised.value.key == "spark.myapp.blob"
    assert "1100000 bytes" in str(raised.value)
    assert items(admin, ns, "pods") == []  # refused before any request


def test_a_kubeconfig_variable_naming_a_missing_file_is_named(
    control_plane, ns: str, kubeconfig: Path, admin: KubeClient, tmp_path: Path
) -> None:
    """The `sparkk8s-submit` command with KUBECONFIG pointing at a missing file: like kubectl
    it goes on with what the Spark conf gives (here no CA, so TLS fails), and both its
    warning and the error name the file instead of leaving a bare TLS error."""
    missing = tmp_path / "gone" / "kubeconfig"
    argv = submit_argv(
        control_plane.server, ns, {}, ["--name", "nokc", "--class", "M", "local:///opt/app.jar"]
    )
    command = Path(sys.executable).with_name("sparkk8s-submit")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "KUBECONFIG": str(missing)}
    result = subprocess.run(
        [str(command), *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert f"warning: KUBECONFIG names {missing}: no such file" in lines[0]
    assert "TLS verification" in lines[-1] and f"KUBECONFIG names {missing}" in lines[-1]
    assert "Traceback" not in result.stderr
    assert items(admin, ns, "pods") == []
    # With the file there, the same command submits.
    env["KUBECONFIG"] = f"{missing}{os.pathsep}{kubeconfig}"  # a missing entry is skipped
    wait_off = ["--conf", "spark.kubernetes.submission.waitAppCompletion=false"]
    result = subprocess.run(
        [str(command), *wait_off, *argv], env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "KUBECONFIG" not in result.stderr
    assert len(items(admin, ns, "pods")) == 1
