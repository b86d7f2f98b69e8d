"""Which local files spark-submit uploads to `spark.kubernetes.file.upload.path`, and how it
rewrites every setting that named them. Pure: the shell (`uploader.py`) does the I/O.

Spark does this inside BasicDriverFeatureStep (`spark.jars`, `spark.files`, `spark.archives`,
`spark.submit.pyFiles`, in that order) and DriverCommandFeatureStep (a Python main file):

- an entry is local when it has no scheme or the `file:` scheme and is not `spark-internal`;
- each local entry is copied to `<upload path>/spark-upload-<uuid>/<file name>`, a new
  random folder per entry (a file named twice is uploaded twice);
- an archive loses its `#fragment` for the copy and gets it back in the new value, which
  Spark writes through a URI builder: an empty authority goes (`file:///x` -> `file:/x`)
  and what a URI path may not hold is percent-encoded (`my env.zip` -> `my%20env.zip`);
- a setting with at least one local entry becomes the uploaded entries (in their order)
  followed by the remote ones (in theirs); a setting without one is left as it was;
- a local Java main jar needs no upload of its own: spark-submit put it in `spark.jars`,
  and the driver's command names it `spark-internal`.

The folder names come from `SubmissionIds.upload_seed`, so the steps and the shell, which
all call `plan_uploads`, agree on every name without sharing state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import field
from urllib.parse import quote, unquote

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.java_text import java_file_name
from airflow_provider_sparkk8s.submission.naming import uuid4_bits, uuid_text
from airflow_provider_sparkk8s.submission.uris import is_local_dependency, uri_scheme

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

UPLOAD_PATH_KEY = "spark.kubernetes.file.upload.path"
DEPENDENCY_KEYS = ("spark.jars", "spark.files", "spark.archives", "spark.submit.pyFiles")
ARCHIVES_KEY = "spark.archives"
PRIMARY_RESOURCE = "primary resource"
UPLOAD_DIR_PREFIX = "spark-upload-"
SPARK_REFUSAL = "Please specify spark.kubernetes.file.upload.path property."
UPLOAD_PATH_ACCEPTED = (
    "remote or in-image URIs (local://, s3a://, https://, ...), or set "
    f"{UPLOAD_PATH_KEY} (such as s3a://bucket/spark-uploads or file:///shared/uploads) "
    "so local files are uploaded there"
)


@record
class Upload:
    """One local file copied to the upload path."""

    key: str  # the conf key that names it, or "primary resource"
    entry: str  # the entry as written, e.g. file:/work/env.tar.gz#env
    source: str  # the local path read on the submitting machine
    directory: str  # <upload path>/spark-upload-<uuid>, created for this file alone
    target: str  # <directory>/<file name>


@record
class UploadPlan:
    """Every upload of one submission and the settings rewritten to point at them."""

    upload_path: str | None
    uploads: tuple[Upload, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)  # key -> rewritten value
    main_resource: str | None = None  # the uploaded Python main file; None: unchanged

    @property
    def directories(self) -> tuple[str, ...]:
        return tuple(upload.directory for upload in self.uploads)


def upload_dir_names(seed: int) -> Iterator[str]:
    """`spark-upload-<random v4 UUID>` names, the same sequence for the same seed."""
    # Imported here: only a submission with local files to upload draws names, and random
    # costs sparkk8s-submit's start-up about 1 ms.
    import random

    draw = random.Random(seed)
    while True:
        yield UPLOAD_DIR_PREFIX + uuid_text(uuid4_bits(draw.getrandbits(128)))


def split_fragment(entry: str) -> tuple[str, str | None]:
    base, hash_, fragment = entry.partition("#")
    return base, (fragment if hash_ else None)


def local_path(entry: str) -> str:
    """The file-system path of a local entry: `URI.getPath` of Spark's resolved URI
    (percent-escapes decoded, fragment dropped)."""
    base, _ = split_fragment(entry)
    if uri_scheme(base) == "file":
        path = base[len("file:") :]
        if path.startswith("//"):  # file://host/path or file:///path: the authority goes
            path = "/" + path[2:].partition("/")[2]
        return unquote(path)
    return base


# What a URI path (RFC 3986 pchar and "/") and a fragment (also "?") may hold unencoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_FRAGMENT_SAFE = _PATH_SAFE + "?"


def _encode(text: str, safe: str) -> str:
    # A valid %XX escape stays as it is; anything else outside `safe` is UTF-8 encoded.
    parts = re.split(r"(%[0-9A-Fa-f]{2})", text)
    return "".join(
        part if index % 2 else quote(part, safe=safe) for index, part in enumerate(parts)
    )


def built_uri(target: str, fragment: str | None) -> str:
    """`target` with `fragment` as Spark's URI builder writes it (for `spark.archives`)."""
    scheme = uri_scheme(target)
    rest = target if scheme is None else target[len(scheme) + 1 :]
    prefix = "" if scheme is None else target[: len(scheme) + 1]
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        if authority:
            prefix += "//" + authority
    built = prefix + _encode(rest, _PATH_SAFE)
    return built if fragment is None else f"{built}#{_encode(fragment, _FRAGMENT_SAFE)}"


class _Planner:
    def __init__(self, conf: DriverConf):
        self.upload_path = conf.get(UPLOAD_PATH_KEY)
        self.names = upload_dir_names(conf.ids.upload_seed)
        self.uploads: list[Upload] = []

    def upload(self, key: str, entry: str) -> str:
        """The target URI of `entry`'s copy (Spark's `uploadFileUri`)."""
        if self.upload_path is None:
            raise SparkConfError(key, entry, UPLOAD_PATH_ACCEPTED, SPARK_REFUSAL)
        source = local_path(entry)
        # Spark's `getPath.split("/").last`: File's name for any path with one; Spark fails
        # on a path of slashes, so it is refused here.
        name = java_file_name(source)
        if not name:
            raise SparkConfError(key, entry, "the path of a local file")
        directory = f"{self.upload_path}/{next(self.names)}"
        target = f"{directory}/{name}"
        self.uploads.append(Upload(key, entry, source, directory, target))
        return target

    def rewrite(self, key: str, entries: list[str]) -> str | None:
        local = [entry for entry in entries if is_local_dependency(entry)]
        if not local:
            return None
        remote = [entry for entry in entries if not is_local_dependency(entry)]
        uploaded = []
        for entry in local:
            target = self.upload(key, entry)
            if key == ARCHIVES_KEY:
                target = built_uri(target, split_fragment(entry)[1])
            uploaded.append(target)
        return ",".join(uploaded + remote)


def plan_uploads(conf: DriverConf) -> UploadPlan:
    """The uploads and rewritten settings of `conf`, in Spark's order.

    Raises SparkConfError naming the key and the entry when a local file has nowhere to
    go (no upload path): spark-submit's own refusal.
    """
    planner = _Planner(conf)
    properties = {}
    for key in DEPENDENCY_KEYS:
        value = planner.rewrite(key, cv.get_list(conf, key))
        if value is not None:
            properties[key] = value
    main = conf.main_app_resource
    main_resource = None
    if (
        main.kind == "python"
        and main.primary_resource
        and is_local_dependency(main.primary_resource)
    ):
        main_resource = planner.upload(PRIMARY_RESOURCE, main.primary_resource)
    return UploadPlan(planner.upload_path, tuple(planner.uploads), properties, main_resource)


_UPLOAD_DIR = (  # compiled by re on first use: only a driver's removal reads it
    UPLOAD_DIR_PREFIX + r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)


def uploaded_dirs_in(properties: Mapping[str, str], main_resource: str | None) -> tuple[str, ...]:
    """The `spark-upload-<uuid>` folders a submission's driver points at, read back from its
    `spark.properties` and its main resource (for a driver adopted from an earlier try)."""
    upload_path = properties.get(UPLOAD_PATH_KEY)
    if not upload_path:
        return ()
    values = [properties.get(key, "") for key in DEPENDENCY_KEYS] + [main_resource or ""]
    names = dict.fromkeys(name for value in values for name in re.findall(_UPLOAD_DIR, value))
    return tuple(f"{upload_path}/{name}" for name in names)


# Volumes whose files the driver shares with the submitting machine (or could): a mount of
# any other kind (emptyDir, configMap, secret, ...) is the pod's own.
_SHARED_VOLUME_TYPES = ("persistentVolumeClaim", "hostPath", "nfs", "csi", "ephemeral")


def _shared_mount_paths(driver_pod: Mapping[str, Any]) -> list[str]:
    spec = driver_pod.get("spec") or {}
    shared = {
        volume.get("name")
        for volume in spec.get("volumes") or []
        if any(kind in volume for kind in _SHARED_VOLUME_TYPES)
    }
    return [
        str(mount.get("mountPath", "")).rstrip("/") or "/"
        for container in spec.get("containers") or []
        for mount in container.get("volumeMounts") or []
        if mount.get("name") in shared
    ]


def _is_under(path: str, folder: str) -> bool:
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/")


def local_upload_path_warning(
    plan: UploadPlan, driver_pod: Mapping[str, Any], temp_dir: str
) -> str | None:
    """A warning when files go to a local upload path (`file://` or a plain path) that no
    shared volume of the driver pod mounts: the driver reads its uploads at the same path in
    its own pod, where it exists only if that storage is mounted there. Spark accepts it (a
    node's hostPath, or an NFS share mounted by a pod template, work), so this never refuses.
    `temp_dir` is the submitting machine's temp folder: the driver's /tmp is its own."""
    upload_path = plan.upload_path
    if not plan.uploads or not upload_path or uri_scheme(upload_path) not in (None, "file"):
        return None
    path = local_path(upload_path)
    if any(_is_under(path, mount) for mount in _shared_mount_paths(driver_pod)):
        return None
    under_temp = (
        f" It is under this machine's temp folder ({temp_dir}), which the driver does not"
        " see: the driver's own temp folder is a different one."
        if _is_under(path, temp_dir) or _is_under(path, "/tmp")
        else ""
    )
    return (
        f"{UPLOAD_PATH_KEY}={upload_path} is a path on this machine: the driver reads the "
        f"uploads at {path} in its own pod, so it must be storage mounted in the driver at "
        "that path (a persistentVolumeClaim, hostPath or nfs volume, through "
        "spark.kubernetes.driver.volumes.* or a pod template); no such volume of the driver "
        f"pod mounts it.{under_temp} An object store (s3a://, gs://, abfs://) needs no mount."
    )
