"""EnvSecretsFeatureStep: `spark.kubernetes.driver.secretKeyRef.<ENV>=<secret>:<key>`.

Each entry becomes a container env var read from a key of an existing Secret. Spark splits
the value with `String.split(":")` and requires exactly two pieces.
"""

from __future__ import annotations

import re

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_subdomain
from airflow_provider_sparkk8s.submission.features._mounts import add_volumes_and_mounts
from airflow_provider_sparkk8s.submission.java_text import java_split
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.EnvSecretsFeatureStep"
SINCE = (2, 4, 0)

PREFIX = "spark.kubernetes.driver.secretKeyRef."
_ACCEPTED = "<secret name>:<key>, for example db-credentials:password"
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")


def secret_key_ref_env(env_name: str, key_ref: str) -> KubeObject:
    conf_key = PREFIX + env_name
    parts = java_split(key_ref, ":")
    if len(parts) != 2:
        raise SparkConfError(conf_key, key_ref, _ACCEPTED)
    secret_name, key = parts
    # The API server would refuse these later, after other objects were created.
    if not is_dns1123_subdomain(secret_name):
        raise SparkConfError(conf_key, key_ref, _ACCEPTED, "the Secret name is not a DNS name")
    if not _SECRET_KEY.fullmatch(key):
        raise SparkConfError(
            conf_key, key_ref, _ACCEPTED, "a Secret key is made of letters, digits, '-', '_', '.'"
        )
    if not env_name or "=" in env_name:
        raise SparkConfError(conf_key, key_ref, _ACCEPTED, "invalid environment variable name")
    return {
        "name": env_name,
        "valueFrom": {"secretKeyRef": {"key": key, "name": secret_name}},
    }


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    env = [secret_key_ref_env(name, ref) for name, ref in conf.prefixed(PREFIX).items()]
    return StepResult(pod=add_volumes_and_mounts(pod, volumes=(), mounts=(), env=env))


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
