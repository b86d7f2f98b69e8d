"""MountSecretsFeatureStep: `spark.kubernetes.driver.secrets.<name>=<mountPath>`.

Each entry mounts the existing Secret `<name>` through a pod volume `<name>-volume`.
Spark validates nothing here; the API server would refuse a volume name that is not a DNS
label or an empty mount path, so those are refused up front instead.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_label
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    first_clash,
)
from airflow_provider_sparkk8s.submission.spark_order import prefixed_map
from airflow_provider_sparkk8s.submission.spec import SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.MountSecretsFeatureStep"
SINCE = (2, 3, 0)

PREFIX = "spark.kubernetes.driver.secrets."


def volume_name(secret_name: str) -> str:
    return f"{secret_name}-volume"


def secrets_to_mount_paths(conf: DriverConf) -> dict[str, str]:
    """Secret name -> mount path, validated, in Spark's map order.

    Spark builds the volumes from that map's key *set*; for more than four secrets the set's
    own hash order (of fabric8 Volume objects) is not reproduced, the map's order is used.
    """
    secrets = prefixed_map(conf.spark_conf, PREFIX, conf.version_tuple)
    for name, mount_path in secrets.items():
        if not is_dns1123_label(volume_name(name)):
            raise SparkConfError(
                PREFIX + name,
                mount_path,
                "a Secret name that makes '<name>-volume' a DNS-1123 label (at most 56 "
                "lower-case letters, digits and '-')",
            )
        if not mount_path:
            raise SparkConfError(PREFIX + name, mount_path, "a non-empty mount path")
    return secrets


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    secrets = secrets_to_mount_paths(conf)
    volumes = [{"name": volume_name(name), "secret": {"secretName": name}} for name in secrets]
    mounts = [{"name": volume_name(name), "mountPath": path} for name, path in secrets.items()]
    clash = first_clash(pod, volumes, mounts)
    if clash is not None:
        name, path = list(secrets.items())[clash]
        raise SparkConfError(
            PREFIX + name, path, "a mount path and volume name not used elsewhere in the pod"
        )
    return StepResult(pod=add_volumes_and_mounts(pod, volumes, mounts))
