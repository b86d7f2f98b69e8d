"""Ours, opt-in: executor decommissioning, so a drain moves blocks instead of failing stages.

One switch, `spark.kubernetes.sparkk8s.executor.decommission.enabled=true`, sets Spark's own
keys (all since Spark 3.1) in the driver's conf, each only where the user has not set it:

- `spark.decommission.enabled`: the driver's BasicExecutorFeatureStep gives every executor
  container a `preStop` hook that runs `spark.kubernetes.decommission.script` (default
  `/opt/decom.sh`, in Spark's images), which sends the executor SIGPWR; the executor then
  stops taking tasks and tells the driver it is leaving, instead of dying mid-stage;
- `spark.storage.decommission.enabled`, with `.rddBlocks.enabled` and
  `.shuffleBlocks.enabled`: before it exits, the executor's block manager copies its cached
  RDD blocks and its shuffle files to the other executors, so the stages that read them do
  not run again.

The migration has the executor pod's termination grace period (30 s unless a pod template
sets `terminationGracePeriodSeconds`). Only system properties: the pod is unchanged. Pure.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult

ENABLED_KEY = "spark.kubernetes.sparkk8s.executor.decommission.enabled"
NAME = "airflow_provider_sparkk8s.submission.features.executor_decommission:step"
SINCE = (0, 0, 0)  # Spark 3.1 has every key; our oldest line is 3.5
SPARK_KEYS = (
    "spark.decommission.enabled",
    "spark.storage.decommission.enabled",
    "spark.storage.decommission.rddBlocks.enabled",
    "spark.storage.decommission.shuffleBlocks.enabled",
)


def enabled(conf: cv.ConfLike) -> bool:
    return cv.get_bool(conf, ENABLED_KEY, False)


def decommission_properties(conf: DriverConf) -> dict[str, str]:
    """Spark's decommissioning keys the user left unset, as "true"."""
    return {key: "true" for key in SPARK_KEYS if key not in conf.spark_conf}


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    if not enabled(conf):
        return StepResult(pod=pod)
    return StepResult(pod=pod, system_properties=decommission_properties(conf))


STEP = FeatureStep(NAME, SINCE, step)
