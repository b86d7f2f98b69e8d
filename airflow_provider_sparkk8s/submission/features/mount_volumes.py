"""MountVolumesFeatureStep: the driver's volumes (`DriverConf.volumes`, parsed by volumes.py)
as pod volumes and mounts of Spark's container.

A PVC whose claim name contains `OnDemand` gets a generated name, and one with both
`options.storageClass` and `options.sizeLimit` is created by Spark, owned by the driver pod
(a post-pod resource). Duplicate mount paths, and volumes that clash with the pod template's,
are refused here rather than by the API server.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import APP_ID_LABEL
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import get_bool, is_dns1123_subdomain
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    first_clash,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult
from airflow_provider_sparkk8s.submission.volumes import (
    DRIVER_PREFIX,
    EMPTY_DIR,
    EXECUTOR_PREFIX,
    HOST_PATH,
    PVC,
    VolumeSpec,
    parse_volumes,
)

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.MountVolumesFeatureStep"
SINCE = (2, 4, 0)

PVC_ON_DEMAND = "OnDemand"
LEGACY_ACCESS_MODE_KEY = "spark.kubernetes.legacy.useReadWriteOnceAccessMode"


def _check_duplicate_paths(specs: tuple[VolumeSpec, ...]) -> None:
    paths = [spec.mount_path for spec in specs]
    duplicated_paths = sorted({p for p in paths if paths.count(p) > 1})
    if duplicated_paths:
        raise SparkConfError(
            DRIVER_PREFIX + "*.mount.path",
            ", ".join(f"'{p}'" for p in duplicated_paths),
            "a different mount path for every volume",
            "found duplicated mountPath",
        )


def _access_mode(conf: DriverConf) -> str:
    legacy_default = conf.version_tuple < (4, 0, 0)  # 3.5 defaulted to ReadWriteOnce
    legacy = get_bool(conf, LEGACY_ACCESS_MODE_KEY, legacy_default)
    return "ReadWriteOnce" if legacy else "ReadWriteOncePod"


def _claim_name(conf: DriverConf, spec: VolumeSpec, index: int) -> str:
    template = spec.options["claimName"] or ""
    if PVC_ON_DEMAND not in template:
        claim = template
    else:
        claim = template.replace(PVC_ON_DEMAND, f"{conf.resource_prefix}-driver-pvc-{index}")
    if not is_dns1123_subdomain(claim):
        raise SparkConfError(
            f"{DRIVER_PREFIX}{PVC}.{spec.volume_name}.options.claimName",
            template,
            "a claim name that is a DNS-1123 subdomain (lower-case letters, digits, '-', '.'); "
            f"'{PVC_ON_DEMAND}' is replaced by a generated name",
        )
    return claim


def _created_claim(conf: DriverConf, spec: VolumeSpec, claim: str, access_mode: str) -> KubeObject:
    metadata: KubeObject = {
        "name": claim,
        # User labels first, Spark's wins on a clash (Scala `labels ++ defaults`).
        "labels": {**spec.labels, APP_ID_LABEL: conf.app_id},
    }
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": {
            "storageClassName": spec.options["storageClass"],
            "accessModes": [access_mode],
            "resources": {"requests": {"storage": spec.options["sizeLimit"]}},
        },
    }


def _mount(spec: VolumeSpec) -> KubeObject:
    mount: KubeObject = {
        "name": spec.volume_name,
        "mountPath": spec.mount_path,
        "readOnly": spec.mount_read_only,
        "subPath": spec.mount_sub_path,
    }
    if spec.mount_sub_path_expr is not None:
        mount["subPathExpr"] = spec.mount_sub_path_expr
    return mount


def _volume_source(spec: VolumeSpec, claim: str | None) -> tuple[str, KubeObject]:
    options = spec.options
    if spec.volume_type == HOST_PATH:
        return "hostPath", {"path": options["path"], "type": options["type"]}
    if spec.volume_type == PVC:
        return "persistentVolumeClaim", {"claimName": claim, "readOnly": spec.mount_read_only}
    if spec.volume_type == EMPTY_DIR:
        source: KubeObject = {"medium": options["medium"] or ""}
        if options["sizeLimit"] is not None:
            source["sizeLimit"] = options["sizeLimit"]
        return "emptyDir", source
    return "nfs", {"path": options["path"], "server": options["server"]}


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    # Spark parses the executor volumes at submission too, so their errors surface now.
    parse_volumes(conf, EXECUTOR_PREFIX)
    specs = conf.volumes
    _check_duplicate_paths(specs)
    access_mode = _access_mode(conf) if specs else ""
    volumes, mounts, claims = [], [], []
    for index, spec in enumerate(specs):
        claim = _claim_name(conf, spec, index) if spec.volume_type == PVC else None
        if (
            claim is not None
            and spec.options["storageClass"] is not None
            and (spec.options["sizeLimit"] is not None)
        ):
            claims.append(_created_claim(conf, spec, claim, access_mode))
        source_field, source = _volume_source(spec, claim)
        volumes.append({"name": spec.volume_name, source_field: source})
        mounts.append(_mount(spec))
    clash = first_clash(pod, volumes, mounts)
    if clash is not None:
        spec = specs[clash]
        raise SparkConfError(
            f"{DRIVER_PREFIX}{spec.volume_type}.{spec.volume_name}.mount.path",
            spec.mount_path,
            "a volume name and mount path not used elsewhere in the pod",
            f"volume {spec.volume_name!r} or its path is already in the pod",
        )
    return StepResult(pod=add_volumes_and_mounts(pod, volumes, mounts), resources=claims)


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
