"""Ours, opt-in: Pod Security Admission's "restricted" profile on the driver pod.

Spark has no such step (4.3 only sets `allowPrivilegeEscalation`). With
`spark.kubernetes.sparkk8s.podSecurity=restricted` (the secure preset sets it) the driver pod
and each container present when it runs (a template's side-cars and init containers, and
Spark's container) get the fields the profile requires that they leave out
(`restricted_profile.harden_pod`). The executors get the same through their pod template
(`pod_template.executor_template_text`), which the driver reads for every executor. It runs
after our other steps, so a volume they add is already there; a user step after it is
checked by the guardrails, not filled. Pure.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.submission import restricted_profile
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult

NAME = "airflow_provider_sparkk8s.submission.features.pod_security:step"
SINCE = (0, 0, 0)


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    if not restricted_profile.enabled(conf):
        return StepResult(pod=pod)
    return StepResult(
        pod=SparkPod(
            pod=restricted_profile.harden_pod(pod.pod),
            container=restricted_profile.harden_container(pod.container),
        )
    )


STEP = FeatureStep(NAME, SINCE, step)
