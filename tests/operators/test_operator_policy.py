"""The operator under the connection's platform policy, and its task identity on the
executors: a breach fails the task without a retry and without a request; an allowed task
runs as before, its executors labelled like its driver."""

from __future__ import annotations

import json

import pytest

from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
    driver_labels,
    pods_selector,
)
from airflow_provider_sparkk8s.errors import PolicyViolation
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from airflow_provider_sparkk8s.version_compat import AirflowFailException
from testenv.fakes import FakeCluster, FakeHook, FakeTaskInstance, driver_status
from tests.operators.test_operator_flow import context, make_operator, progress

SECRET = "planted-token-2c7e91"
PLATFORM_LABELS = {"cost-center": "data-eng", "platform.example.com/tier": "batch"}
POLICY = {
    # The operator's own label keys are not the author's: this glob leaves them alone.
    "denied_keys": ["spark.kubernetes.driver.label.*", "spark.kubernetes.authenticate.*"],
    "allowed_namespaces": ["team-*"],
    "max_executors": 4,
    "required_labels": ["cost-center"],
    "labels": PLATFORM_LABELS,
}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    cluster = FakeCluster()
    hook = FakeHook(cluster, extra={"policy": json.dumps(POLICY)})  # as the form stores it
    monkeypatch.setattr(SparkK8sSubmitOperator, "_hook", lambda self: hook)
    return cluster


def properties_sent(cluster: FakeCluster) -> dict[str, str]:
    applied = next(a["content"] for a in cluster.applied if "configmaps" in a["path"])
    return load_java_properties(json.loads(applied)["data"]["spark.properties"])


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"num_executors": 9}, "spark.executor.instances"),
        ({"conf": {"spark.kubernetes.authenticate.submission.oauthToken": SECRET}},
         "spark.kubernetes.authenticate.submission.oauthToken"),
        ({"conf": {"spark.kubernetes.driver.label.cost-center": "mine"}},
         "spark.kubernetes.driver.label.cost-center"),
        ({"namespace": "kube-system"}, "spark.kubernetes.namespace"),
    ],
)  # fmt: skip
def test_a_breach_fails_without_retry_and_without_a_request(
    cluster: FakeCluster, overrides: dict, key: str
) -> None:
    with pytest.raises(AirflowFailException) as caught:
        make_operator(**overrides).execute(context())
    assert cluster.requests == []
    violation = caught.value.__cause__
    assert isinstance(violation, PolicyViolation)
    assert key in {k for k, _, _ in violation.violations}
    assert "connection 'spark_k8s_default' (extra policy)" in str(caught.value)
    assert "not retried" in str(caught.value) and SECRET not in str(caught.value)


def test_an_allowed_task_runs_with_its_identity_and_the_platform_labels_on_every_pod(
    cluster: FakeCluster,
) -> None:
    cluster.on_list = progress(driver_status("finished"))
    ti = FakeTaskInstance()
    make_operator(num_executors=3, on_finish_action="keep_pod").execute(context(ti))
    properties = properties_sent(cluster)
    ref = TaskInstanceRef(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
    identity = driver_labels(ref, 1)
    for role in ("driver", "executor"):
        for label, value in {**identity, **PLATFORM_LABELS}.items():
            assert properties[f"spark.kubernetes.{role}.label.{label}"] == value
    (pod,) = cluster.pods.values()
    assert pod["metadata"]["labels"]["cost-center"] == "data-eng"
    assert pods_selector(ref) == f"{TASK_INSTANCE_LABEL}={ref.digest}"


def test_the_dry_run_shows_the_policy_and_refuses_a_breach(cluster: FakeCluster, capfd) -> None:
    make_operator(dry_run=True).execute(context())
    text = "".join(capfd.readouterr())
    assert "Dry run: Policy from connection 'spark_k8s_default' (extra policy): every rule " in text
    with pytest.raises(AirflowFailException, match="max_executors 4"):
        make_operator(dry_run=True, num_executors=5).execute(context())
    assert cluster.requests == []


def test_a_config_policy_applies_when_the_connection_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = FakeCluster()
    monkeypatch.setattr(SparkK8sSubmitOperator, "_hook", lambda self: FakeHook(cluster))
    monkeypatch.setenv("AIRFLOW__SPARKK8S__POLICY", '{"max_executors": 1}')
    with pytest.raises(AirflowFailException, match=r"from \[sparkk8s\] policy .*max_executors 1"):
        make_operator(num_executors=2).execute(context())
    assert cluster.requests == []


def test_without_a_policy_only_the_identity_is_added_to_the_executors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = FakeCluster()
    monkeypatch.setattr(SparkK8sSubmitOperator, "_hook", lambda self: FakeHook(cluster))
    cluster.on_list = progress(driver_status("finished"))
    make_operator().execute(context())
    executor_keys = {
        key
        for key in properties_sent(cluster)
        if key.startswith("spark.kubernetes.executor.label.")
    }
    assert executor_keys == {f"spark.kubernetes.executor.label.{label}" for label in driver_labels(
        TaskInstanceRef("etl", "spark_pi", "manual__1"), 1)}  # fmt: skip
