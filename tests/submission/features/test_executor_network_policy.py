"""The executor NetworkPolicy backport: off by default, Spark 4.2's object on 3.5-4.1 when
enabled, nothing from 4.2 on (Spark's own step sends it there)."""

from __future__ import annotations

from airflow_provider_sparkk8s.submission.features import executor_network_policy, network_policy
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import make_conf

ENABLED = {executor_network_policy.ENABLED_KEY: "true", "spark.kubernetes.namespace": "jobs"}


def test_off_by_default_leaves_the_pod_and_sends_nothing() -> None:
    conf = make_conf({"spark.kubernetes.namespace": "jobs"}, version="3.5.6")
    result = executor_network_policy.step(conf, SparkPod.initial())
    assert result.pod == SparkPod.initial()
    assert result.resources == ()
    assert executor_network_policy.enabled(conf.spark_conf) is False


def test_enabled_before_4_2_sends_the_object_spark_4_2_would() -> None:
    for version in ("3.5.6", "4.0.1", "4.1.0"):
        conf = make_conf(ENABLED, version=version)
        result = executor_network_policy.step(conf, SparkPod.initial())
        assert result.pod == SparkPod.initial() and result.system_properties == {}
        assert result.resources == (network_policy.network_policy(conf),)
        assert result.resources[0]["spec"]["podSelector"]["matchLabels"]["spark-role"] == (
            "executor"
        )


def test_enabled_from_4_2_on_leaves_it_to_spark() -> None:
    for version in ("4.2.0", "4.3.0"):
        result = executor_network_policy.step(
            make_conf(ENABLED, version=version), SparkPod.initial()
        )
        assert result.resources == ()


def test_runs_on_every_line_under_its_own_name() -> None:
    assert executor_network_policy.STEP.since == (0, 0, 0)
    assert executor_network_policy.STEP.name.endswith("executor_network_policy:step")
