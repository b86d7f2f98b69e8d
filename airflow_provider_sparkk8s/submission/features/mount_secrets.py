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
from airflow_provider_sparkk8s.submission.spark_order import (
    hash_set_order,
    java_string_hash,
    lombok_hash,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.MountSecretsFeatureStep"
SINCE = (2, 3, 0)

PREFIX = "spark.kubernetes.driver.secrets."


def volume_name(secret_name: str) -> str:
    return f"{secret_name}-volume"


def secrets_to_mount_paths(conf: DriverConf) -> dict[str, str]:
    """Secret name -> mount path, validated, in Spark's map order (the mounts' order)."""
    secrets = conf.prefixed(PREFIX)
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


_NULL = 43  # Lombok's hash of a null field


def _fabric8_volume_hash(secret_name: str, fabric8_7: bool) -> int:
    """`hashCode` of the fabric8 Volume Spark builds for a secret (fields in Lombok's order:
    Volume has 30 fields plus additionalProperties in fabric8 6, 31 in 7 (`image` added))."""
    secret_source = lombok_hash(
        [_NULL, _NULL, 1, java_string_hash(secret_name) & 0xFFFFFFFF, 0]
    )  # defaultMode, optional, items (empty list), secretName, additionalProperties (empty)
    fields = [_NULL] * (31 if fabric8_7 else 30)  # then additionalProperties
    fields[19 if fabric8_7 else 18] = java_string_hash(volume_name(secret_name)) & 0xFFFFFFFF
    fields[28 if fabric8_7 else 27] = secret_source
    return lombok_hash([*fields, 0])


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    secrets = secrets_to_mount_paths(conf)
    names = list(secrets)
    volumes = [{"name": volume_name(name), "secret": {"secretName": name}} for name in names]
    mounts = [{"name": volume_name(name), "mountPath": secrets[name]} for name in names]
    clash = first_clash(pod, volumes, mounts)
    if clash is not None:
        raise SparkConfError(
            PREFIX + names[clash],
            secrets[names[clash]],
            "a mount path and volume name not used elsewhere in the pod",
        )
    # Mounts follow the map; the volumes come from its key set mapped to a set of Volume
    # objects, which beyond four iterates in the order of the Volumes' hashes.
    since_4 = conf.version_tuple >= (4, 0, 0)
    order = hash_set_order([_fabric8_volume_hash(name, since_4) for name in names], since_4)
    volumes = [volumes[index] for index in order]
    return StepResult(pod=add_volumes_and_mounts(pod, volumes, mounts))


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
