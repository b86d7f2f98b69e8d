"""A driver image that does not exist, on the real node (issue 43, item 4): the real kubelet
and containerd 1.6 pull from a registry that answers as a registry does
(testenv/registry.py, on the host's loopback, reached by containerd at the node's own
127.0.0.1 over plain HTTP). The node has no network, so a made-up registry host would only
meet a DNS timeout; this registry gives containerd its own "not found".

- the operator, waiting in the worker, with retries=2 and the default startup_timeout of
  600 s: fails within a minute as `ConfigurationError`, naming the image and containerd's
  answer; the retry policy fails it (not retried); the driver pod goes although keep_pod;
- sparkk8s-submit on Docker Hub's answer for a repository it does not have ("pull access
  denied, repository does not exist or may require authorization"): exit 6, driver deleted;
- a registry answering 503 (transient): the operator waits for its startup timeout, and
  the failure is infrastructure (retried), naming the 503.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import ConfigurationError, InfrastructureFailure
from airflow_provider_sparkk8s.operators.spark_k8s import (
    APPLICATION_XCOM_KEY,
    SparkK8sSubmitOperator,
)
from airflow_provider_sparkk8s.version_compat import RetryAction
from testenv.controlplane import ControlPlane
from testenv.fakes import FakeTaskInstance
from testenv.harness.kube import request
from testenv.harness.waiting import wait_for
from testenv.real_spark import BASE_CONF, PI, REAL_SPARK_TIMINGS, SMALL_PODS, submit_with_cli
from testenv.realnode.node import RealNode
from testenv.registry import MissingImageRegistry
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

CONF = {key: value for key, value in BASE_CONF.items() if key != "spark.kubernetes.container.image"}


@pytest.fixture(scope="module")
def registry(real_node: RealNode, real_plane: ControlPlane) -> Iterator[MissingImageRegistry]:
    with MissingImageRegistry() as server:
        real_node.expose_host_port(server.port)
        yield server


def image(registry: MissingImageRegistry, repository: str) -> str:
    return f"127.0.0.1:{registry.port}/sparkk8s/{repository}:4.3.0"


def drivers(api: Any, namespace: str) -> list[dict[str, Any]]:
    listing = request(
        api, "GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector=spark-role=driver"
    )
    return listing["items"]


def operator(
    task_id: str, image_name: str, namespace: str, conn_id: str, **arguments: Any
) -> SparkK8sSubmitOperator:
    return SparkK8sSubmitOperator(
        task_id=task_id,
        application=PI,
        image=image_name,
        conf={**CONF, **SMALL_PODS},
        namespace=namespace,
        kubernetes_conn_id=conn_id,
        deferrable=False,
        poll_interval=1.0,
        retries=2,
        on_finish_action="keep_pod",
        **arguments,
    )


def test_the_operator_fails_within_a_minute_not_retried_naming_the_image_and_the_answer(
    registry: MissingImageRegistry,
    real_namespace: str,
    real_submitter: Path,
    real_admin: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = image(registry, "missing")
    task = operator("missing", missing, real_namespace, connection_for(monkeypatch, real_submitter))
    assert task.following.startup_timeout == 600  # the default: the wait this replaces
    ti = FakeTaskInstance(task_id="missing")
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as raised:
        task.execute({"ti": ti})
    took = time.monotonic() - started
    REAL_SPARK_TIMINGS["real node, missing image: operator execute -> ConfigurationError"] = took
    assert took < 60, took
    message = str(raised.value)
    assert message.startswith("[configuration_error] Spark application spark-"), message
    assert (
        f'ImageNotFound: image "{missing}" of container spark-kubernetes-driver does not '
        in message
    )
    # containerd 1.6.20's own answer, as the kubelet reported it
    assert message.endswith(
        f'failed to pull and unpack image "{missing}": failed to resolve reference '
        f'"{missing}": {missing}: not found'
    ), message
    assert raised.value.reason == "ImageNotFound"
    policy = task.retry_policy
    assert policy is not None
    decision = policy.evaluate(raised.value, 1, 3)  # first of three tries: not retried
    assert decision.action is RetryAction.FAIL, decision
    xcom = ti.xcom[APPLICATION_XCOM_KEY]
    assert (xcom["reason"], xcom["cause"]) == ("configuration_error", "ImageNotFound")
    assert ("HEAD", "/v2/sparkk8s/missing/manifests/4.3.0") in registry.requests
    # Deleted although keep_pod: its kubelet would pull it forever.
    wait_for(lambda: drivers(real_admin, real_namespace) == [], 60, "the driver pod deleted")


def test_the_cli_exits_6_on_docker_hubs_answer_and_deletes_the_driver(
    registry: MissingImageRegistry,
    real_plane: ControlPlane,
    real_namespace: str,
    real_submitter: Path,
    real_admin: Any,
) -> None:
    denied = image(registry, "denied")
    conf = {**SMALL_PODS, "spark.kubernetes.container.image": denied}
    started = time.monotonic()
    done = submit_with_cli(real_plane, real_namespace, real_submitter, "denied", [PI], conf)
    took = time.monotonic() - started
    REAL_SPARK_TIMINGS["real node, missing image: CLI exit 6"] = took
    said = done.stdout + done.stderr
    assert done.returncode == 6, said
    assert f'failed, ImageNotFound: image "{denied}"' in said
    assert (
        "pull access denied, repository does not exist or may require authorization: server "
        "message: insufficient_scope: authorization failed"
    ) in said
    assert "Failure kind: configuration_error" in said
    assert "(its image does not exist)." in said
    assert took < 60, took
    wait_for(lambda: drivers(real_admin, real_namespace) == [], 60, "the driver pod deleted")


def test_a_registry_answering_503_waits_for_the_startup_timeout_as_infrastructure(
    registry: MissingImageRegistry,
    real_namespace: str,
    real_submitter: Path,
    real_admin: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unavailable = image(registry, "unavailable")
    conn_id = connection_for(monkeypatch, real_submitter)
    task = operator("unavailable", unavailable, real_namespace, conn_id, startup_timeout=15)
    started = time.monotonic()
    with pytest.raises(InfrastructureFailure) as raised:
        task.execute({"ti": FakeTaskInstance(task_id="unavailable")})
    took = time.monotonic() - started
    REAL_SPARK_TIMINGS["real node, registry 503: operator execute -> StartupTimeout"] = took
    assert took >= 15, took
    message = str(raised.value)
    assert "StartupTimeout: the driver did not start within 15s (pending, " in message
    assert "503 Service Unavailable" in message, message
    policy = task.retry_policy
    assert policy is not None
    assert policy.evaluate(raised.value, 1, 3).action is RetryAction.RETRY
    wait_for(lambda: drivers(real_admin, real_namespace) == [], 60, "the driver pod deleted")
