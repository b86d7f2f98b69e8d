"""Ours, opt-in: a PodDisruptionBudget that keeps voluntary disruptions off the driver.

Spark has no such step. A `kubectl drain`, a node autoscaler's consolidation or anything else
that goes through the Eviction API evicts a running driver, and the application dies with it
(executors are replaced; the driver is not). With
`spark.kubernetes.sparkk8s.driver.disruptionBudget.enabled=true` the submission sends a
PodDisruptionBudget with the driver: `minAvailable: 1` over this application's driver pod
only (its `spark-app-selector` and `spark-role=driver` labels), so the API server refuses
its eviction (429) while it runs; a drain waits until the application ends. It is a
post-pod resource, owned by the driver pod like the Service and the conf ConfigMap, so the
garbage collector removes it with the pod.

`unhealthyPodEvictionPolicy: AlwaysAllow`: a driver that is not Ready (its node lost, its
container ended) is not protected, so a drain of a broken node never waits on it. Pure.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.objects import APP_ID_LABEL, ROLE_LABEL
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

ENABLED_KEY = "spark.kubernetes.sparkk8s.driver.disruptionBudget.enabled"
# Ours, not Spark's: named like a user step, by its import path (excludedFeatureSteps drops
# it by this name, as it drops a user step).
NAME = "airflow_provider_sparkk8s.submission.features.driver_disruption_budget:step"
SINCE = (0, 0, 0)  # every Spark line: Spark itself never sees the budget


def enabled(conf: cv.ConfLike) -> bool:
    return cv.get_bool(conf, ENABLED_KEY, False)


def budget_name(conf: DriverConf) -> str:
    return conf.resource_prefix + "-driver-pdb"


def disruption_budget(conf: DriverConf) -> KubeObject:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": budget_name(conf),
            "namespace": conf.namespace,
            "labels": {APP_ID_LABEL: conf.app_id},
        },
        "spec": {
            "minAvailable": 1,
            "selector": {"matchLabels": {APP_ID_LABEL: conf.app_id, ROLE_LABEL: "driver"}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    if not enabled(conf):
        return StepResult(pod=pod)
    return StepResult(pod=pod, resources=(disruption_budget(conf),))


STEP = FeatureStep(NAME, SINCE, step)
