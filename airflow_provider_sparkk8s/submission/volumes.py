"""Spark's driver and executor volumes from the conf: `KubernetesVolumeUtils` and its specs.

`spark.kubernetes.{driver,executor}.volumes.<type>.<name>.<option>`: every key's first two
dot-separated parts name a volume; `mount.path` is required; the type decides the required
options. 4.0 added `mount.subPathExpr`, hostPath `options.type` and PVC `label.*` /
`annotation.*`. Parsed once per submission, as `DriverConf.volumes`; `MountVolumesFeatureStep`
(features/mount_volumes.py) turns the specs into pod volumes, mounts and claims.

Spark leaves some invalid values for the API server to refuse (volume names that are not
DNS labels, malformed quantities); they are refused here instead, before anything is created.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf_values import (
    is_dns1123_label,
    parse_bool,
    validate_annotations,
    validate_labels,
    validate_quantity,
)
from airflow_provider_sparkk8s.submission.java_text import java_split
from airflow_provider_sparkk8s.submission.spark_order import scala_set_order

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any, Protocol

DRIVER_PREFIX = "spark.kubernetes.driver.volumes."
EXECUTOR_PREFIX = "spark.kubernetes.executor.volumes."

HOST_PATH = "hostPath"
PVC = "persistentVolumeClaim"
EMPTY_DIR = "emptyDir"
NFS = "nfs"
VOLUME_TYPES = (HOST_PATH, PVC, EMPTY_DIR, NFS)
HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)


if TYPE_CHECKING:

    class VolumeConf(Protocol):
        """What parsing reads of a submission (`conf.DriverConf` is one). A protocol, so
        DriverConf can parse its volumes with this module without it importing conf.py back."""

        @property
        def version_tuple(self) -> tuple[int, int, int]: ...
        def prefixed(self, prefix: str) -> dict[str, str]: ...


_SIZE_ACCEPTED = "a Kubernetes quantity with units, such as 500Mi or 10Gi"


@record
class VolumeSpec:
    """One parsed volume: Spark's KubernetesVolumeSpec plus its type-specific conf."""

    volume_type: str
    volume_name: str
    mount_path: str
    mount_sub_path: str
    mount_sub_path_expr: str | None  # None before 4.0 (the field did not exist)
    mount_read_only: bool
    options: Mapping[str, str | None]  # type-specific, see _volume_options
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def _volume_types_and_names(properties: Mapping[str, str]) -> list[tuple[str, str]]:
    # Spark collects these into a Set: up to four keep the map's first-seen order; beyond
    # four, parse_volumes reorders the specs by their hash as Spark's HashSet does.
    seen: dict[tuple[str, str], None] = {}
    for key in properties:
        parts = java_split(key, ".")
        if len(parts) >= 2:
            seen.setdefault((parts[0], parts[1]), None)
    return list(seen)


def _require(properties: Mapping[str, str], prefix: str, key: str, volume_type: str) -> str:
    if key not in properties:
        raise SparkConfError(prefix + key, None, f"a value: it is required for {volume_type}")
    return properties[key]


def _verify_size(conf_key: str, size: str | None, since_4: bool) -> None:
    """Spark 4 refuses a bare number under 1024 ("Missing units?"; 3.5.9 has no such check);
    the API server refuses anything that is not a quantity."""
    if size is None:
        return
    if since_4 and all(ch.isdecimal() for ch in size):
        # Spark runs Long.parseLong here: empty or overlong digit strings fail too.
        if not size or int(size) >= 1 << 63:
            raise SparkConfError(conf_key, size, _SIZE_ACCEPTED)
        if int(size) < 1024:
            raise SparkConfError(
                conf_key, size, _SIZE_ACCEPTED, "smaller than 1KiB; missing units?"
            )
    try:
        validate_quantity(conf_key, size)
    except SparkConfError:
        raise SparkConfError(conf_key, size, _SIZE_ACCEPTED) from None


def _replace_all(properties: Mapping[str, str], map_key: str) -> dict[str, str]:
    """A volume's own `label.*` / `annotation.*` entries. Not `getAllWithPrefix`: Spark
    filters the volume's keys and strips `map_key` with String.replaceAll, i.e. as a regex,
    everywhere in the key; for ordinary names that is the same as removing the prefix."""
    try:
        pattern = re.compile(map_key)
    except re.error:
        pattern = re.compile(re.escape(map_key))
    return {
        pattern.sub("", key): value for key, value in properties.items() if key.startswith(map_key)
    }


def _volume_options(
    properties: Mapping[str, str], prefix: str, volume_type: str, base: str, since_4: bool
) -> dict[str, str | None]:
    def opt(name: str) -> str | None:
        return properties.get(f"{base}.options.{name}")

    if volume_type == HOST_PATH:
        path = _require(properties, prefix, f"{base}.options.path", HOST_PATH)
        host_type = opt("type") if since_4 else None
        if host_type is not None and host_type not in HOST_PATH_TYPES:
            raise SparkConfError(
                f"{prefix}{base}.options.type",
                host_type,
                "a hostPath type: empty, " + ", ".join(HOST_PATH_TYPES[1:]),
            )
        # "" means no check before mounting; 3.5 always sent it.
        return {"path": path, "type": host_type or ""}
    if volume_type == PVC:
        claim = _require(properties, prefix, f"{base}.options.claimName", PVC)
        _verify_size(f"{prefix}{base}.options.sizeLimit", opt("sizeLimit"), since_4)
        return {
            "claimName": claim,
            "storageClass": opt("storageClass"),
            "sizeLimit": opt("sizeLimit"),
        }
    if volume_type == EMPTY_DIR:
        _verify_size(f"{prefix}{base}.options.sizeLimit", opt("sizeLimit"), since_4)
        return {"medium": opt("medium"), "sizeLimit": opt("sizeLimit")}
    if volume_type == NFS:
        path = _require(properties, prefix, f"{base}.options.path", NFS)
        server = _require(properties, prefix, f"{base}.options.server", NFS)
        return {"path": path, "server": server}
    raise SparkConfError(
        f"{prefix}{base}",
        volume_type,
        "a volume type among " + ", ".join(VOLUME_TYPES),
        f"Kubernetes volume type {volume_type!r} is not supported",
    )


def parse_volumes(conf: VolumeConf, prefix: str) -> tuple[VolumeSpec, ...]:
    """Every volume configured under `prefix`, validated, in Spark's order."""
    properties = conf.prefixed(prefix)
    since_4 = conf.version_tuple >= (4, 0, 0)
    specs = []
    for volume_type, name in _volume_types_and_names(properties):
        base = f"{volume_type}.{name}"
        sub_path_key, sub_path_expr_key = f"{base}.mount.subPath", f"{base}.mount.subPathExpr"
        if since_4 and sub_path_key in properties and sub_path_expr_key in properties:
            raise SparkConfError(
                prefix + sub_path_expr_key,
                properties[sub_path_expr_key],
                f"only one of {prefix}{sub_path_key} and {prefix}{sub_path_expr_key}",
                "these options are mutually exclusive",
            )
        mount_path_key = f"{base}.mount.path"
        if mount_path_key not in properties:
            raise SparkConfError(prefix + mount_path_key, None, "a mount path: it is required")
        mount_path = properties[mount_path_key]
        read_only_key = f"{base}.mount.readOnly"
        read_only = read_only_key in properties and parse_bool(
            prefix + read_only_key, properties[read_only_key], trim=False
        )
        options = _volume_options(properties, prefix, volume_type, base, since_4)
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        if since_4:
            labels = validate_labels(
                f"{prefix}{base}.label.", _replace_all(properties, f"{base}.label.")
            )
            annotations = validate_annotations(
                f"{prefix}{base}.annotation.", _replace_all(properties, f"{base}.annotation.")
            )
        if not is_dns1123_label(name):
            raise SparkConfError(
                prefix + mount_path_key,
                name,
                "a volume name that is a DNS-1123 label (at most 63 lower-case letters, "
                "digits and '-')",
                "invalid volume name",
            )
        if not mount_path:
            raise SparkConfError(prefix + mount_path_key, mount_path, "a non-empty mount path")
        specs.append(
            VolumeSpec(
                volume_type=volume_type,
                volume_name=name,
                mount_path=mount_path,
                mount_sub_path=properties.get(sub_path_key, ""),
                mount_sub_path_expr=properties.get(sub_path_expr_key, "") if since_4 else None,
                mount_read_only=read_only,
                options=options,
                labels=labels,
                annotations=annotations,
            )
        )
    order = scala_set_order([_as_scala(spec, since_4) for spec in specs], scala_213=since_4)
    return tuple(specs[index] for index in order)


def _option(value: str | None) -> object:
    return None if value is None else ("Some", value)


def _as_scala(spec: VolumeSpec, since_4: bool) -> tuple[Any, ...]:
    """The spec as Spark's case classes, for their hash: more than four volumes are a Scala
    HashSet in Spark, iterated in the order of those hashes."""
    options = spec.options
    conf: tuple[Any, ...]
    if spec.volume_type == HOST_PATH:
        conf = ("KubernetesHostPathVolumeConf", options["path"])
        conf += (options["type"],) if since_4 else ()
    elif spec.volume_type == PVC:
        conf = (
            "KubernetesPVCVolumeConf",
            options["claimName"],
            _option(options["storageClass"]),
            _option(options["sizeLimit"]),
        )
        conf += (("Some", dict(spec.labels)), ("Some", dict(spec.annotations))) if since_4 else ()
    elif spec.volume_type == EMPTY_DIR:
        conf = (
            "KubernetesEmptyDirVolumeConf",
            _option(options["medium"]),
            _option(options["sizeLimit"]),
        )
    else:
        conf = ("KubernetesNFSVolumeConf", options["path"], options["server"])
    mount: tuple[str, ...] = (spec.mount_path, spec.mount_sub_path)
    mount += (spec.mount_sub_path_expr or "",) if since_4 else ()
    return ("KubernetesVolumeSpec", spec.volume_name, *mount, spec.mount_read_only, conf)
