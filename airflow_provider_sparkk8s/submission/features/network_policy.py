"""Spark's NetworkPolicyFeatureStep (4.2+): only pods of this application reach its executors."""

from __future__ import annotations

from airflow_provider_sparkk8s.objects import APP_ID_LABEL, ROLE_LABEL
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep"
SINCE = (4, 2, 0)


def network_policy(conf: DriverConf) -> KubeObject:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": conf.resource_prefix + "-policy",
            "namespace": conf.namespace,
            "labels": {APP_ID_LABEL: conf.app_id},
        },
        "spec": {
            "podSelector": {"matchLabels": {ROLE_LABEL: "executor", APP_ID_LABEL: conf.app_id}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {APP_ID_LABEL: conf.app_id}}}]}],
        },
    }


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    return StepResult(pod=pod, resources=(network_policy(conf),))


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
