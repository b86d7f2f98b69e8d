"""Ours, opt-in: Spark 4.2's executor NetworkPolicy on the lines before 4.2.

Spark 4.2 added NetworkPolicyFeatureStep (network_policy.py): only pods of the same
application may connect to its executors. Earlier lines leave executors open to every pod
of the cluster (with authentication on, a stranger cannot talk Spark's RPC to them, but can
reach their block manager's and shuffle ports). With
`spark.kubernetes.sparkk8s.networkPolicy.enabled=true` (the secure preset sets it) this step
sends the same object on 3.5-4.1, named and shaped as 4.2 names it, so a cluster sees one
policy whatever the line. From 4.2 on it does nothing: Spark's own step sends it. Like
Spark's, it selects executors only: the driver stays reachable by the Spark UI's proxy
and by metrics scrapers. A NetworkPolicy needs a network plugin that enforces it. Pure.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.features import network_policy
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult

ENABLED_KEY = "spark.kubernetes.sparkk8s.networkPolicy.enabled"
NAME = "airflow_provider_sparkk8s.submission.features.executor_network_policy:step"
SINCE = (0, 0, 0)


def enabled(conf: cv.ConfLike) -> bool:
    return cv.get_bool(conf, ENABLED_KEY, False)


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    if not enabled(conf) or conf.version_tuple >= network_policy.SINCE:
        return StepResult(pod=pod)
    return StepResult(pod=pod, resources=(network_policy.network_policy(conf),))


STEP = FeatureStep(NAME, SINCE, step)
