"""The platform policy with the real API server behind the recording endpoint: every
generated breach is refused by `sparkk8s-submit --policy` before any request (the recorder,
which forwards to kube-apiserver, saw none), and generated confs the policy allows are
submitted and accepted by the real API server."""

from __future__ import annotations

import io
import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import config as k8s_config

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import PolicyViolation
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.recorder import RecordingServer
from testenv.harness.waiting import wait_for
from tests.parity.apiserver import ApiServerUpstream
from tests.support.policy_confs import BREACHES, POLICY_DOCUMENT, SECRET, Breach, allowed_confs

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]
JAR = "local:///opt/spark/examples/jars/spark-examples.jar"
EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def upstream(control_plane: ControlPlane) -> Iterator[ApiServerUpstream]:
    """A namespace of the real API server (every request's namespace is rewritten to it),
    with the service accounts the allowed confs name."""
    api = k8s_config.new_client_from_config(config_file=str(control_plane.admin_kubeconfig))
    name = f"policy-{secrets.token_hex(3)}"
    kube.request(api, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        for account in ("spark", "spark-etl"):
            body = {"metadata": {"name": account}}
            kube.request(api, "POST", f"/api/v1/namespaces/{name}/serviceaccounts", body)
        # The controller manager makes `default` a moment after the namespace: a 404 is "not
        # yet" (the probe raised on it, so under load the fixture failed instead of waiting).
        wait_for(
            lambda: kube.exists(api, f"/api/v1/namespaces/{name}/serviceaccounts/default"),
            30,
            f"service account {name}/default",
        )
        yield ApiServerUpstream(
            control_plane.server,
            str(control_plane.ca_file),
            str(control_plane.admin_cert_file),
            str(control_plane.admin_key_file),
            name,
        )
    finally:
        kube.request(api, "DELETE", f"/api/v1/namespaces/{name}")
        api.close()


@pytest.fixture(scope="module")
def server(upstream: ApiServerUpstream) -> Iterator[RecordingServer]:
    with RecordingServer(upstream=upstream) as recording:
        yield recording


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "policy.json"
    path.write_text(json.dumps(POLICY_DOCUMENT))
    return path


def submit(server: RecordingServer, conf: dict, home: Path, *flags: str) -> int:
    argv = ["--spark-version", "4.0.1", *flags, "--master", f"k8s://{server.url}",
            "--deploy-mode", "cluster", "--name", "pi",
            "--class", "org.apache.spark.examples.SparkPi"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    environ = {"HOME": str(home), "KUBECONFIG": str(home / "none")}
    return run([*argv, JAR], environ=environ, out=io.StringIO(), err=io.StringIO()).exit_code


@EXAMPLES
@given(conf=allowed_confs(), breach=st.sampled_from(BREACHES))
def test_every_breach_is_refused_before_any_request(
    conf: dict, breach: Breach, server: RecordingServer, policy_file: Path, tmp_path: Path
) -> None:
    server.reset()
    breach.change(conf)
    with pytest.raises(PolicyViolation) as caught:
        submit(server, conf, tmp_path, "--policy", str(policy_file))
    assert breach.key in {key for key, _, _ in caught.value.violations}
    assert SECRET not in str(caught.value)
    assert server.recording.requests == []  # nothing reached the API server


@pytest.mark.parametrize("breach", BREACHES, ids=lambda b: f"{b.rule}:{b.key[:40]}")
def test_each_breach_by_the_environment_variable_is_refused_before_any_request(
    breach: Breach, server: RecordingServer, policy_file: Path, tmp_path: Path
) -> None:
    conf = {
        "spark.kubernetes.namespace": "team-a",
        "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
        "spark.kubernetes.container.image": "apache/spark:4.0.1",
        "spark.executor.instances": "2",
        "spark.kubernetes.driver.label.team": "etl",
        "spark.kubernetes.executor.label.team": "etl",
        "spark.kubernetes.submission.waitAppCompletion": "false",
    }
    breach.change(conf)
    server.reset()
    argv = ["--spark-version", "4.0.1", "--master", f"k8s://{server.url}",
            "--deploy-mode", "cluster", "--class", "org.apache.spark.examples.SparkPi"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    environ = {"HOME": str(tmp_path), "SPARKK8S_POLICY_FILE": str(policy_file)}
    with pytest.raises(PolicyViolation) as caught:
        run([*argv, JAR], environ=environ, out=io.StringIO(), err=io.StringIO())
    assert (breach.key, breach.rule) in {
        (key, rule.split(" ", 1)[0]) for key, _, rule in caught.value.violations
    }
    assert server.recording.requests == []


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(conf=allowed_confs())
def test_allowed_confs_are_sent_and_the_real_api_server_accepts_them(
    conf: dict, server: RecordingServer, upstream: ApiServerUpstream, policy_file: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    server.reset()
    try:
        assert submit(server, conf, tmp_path, "--policy", str(policy_file)) == 0
        created = [path for path in upstream.created if "/pods/" in path]
        assert len(created) == 1, upstream.created
        pod = json.loads(upstream.send("GET", created[0], {}, b"")[1])
        assert (
            pod["spec"]["serviceAccountName"]
            == conf["spark.kubernetes.authenticate.driver.serviceAccountName"]
        )
        assert pod["metadata"]["labels"]["team"] == conf["spark.kubernetes.driver.label.team"]
        assert [r.method for r in server.recording.requests][:1] == ["POST"]
    finally:
        assert upstream.clean_up() == []
