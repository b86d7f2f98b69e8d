"""IMPURE: copy the files of an `UploadPlan` to the upload path through fsspec, all or nothing.

The shell runs `upload_all` after the pure pipeline has rendered every object (bad input has
failed by then) and before the first API request; if the submission then fails, it calls
`UploadedFiles.remove`. Each file is written, then its size is read back and compared, so a
short write is caught; on any failure every `spark-upload-<uuid>` folder written so far is
removed and the error says what was left, if anything could not be.

Backends are optional extras: `[s3]` (s3fs: `s3://`, `s3a://`), `[gcs]` (gcsfs: `gs://`),
`[azure]` (adlfs: `abfs://`, `abfss://`, `az://`, and hadoop-azure's `wasb://`, `wasbs://`,
served as abfs://); `file://` and plain paths need nothing.
Credentials live in `Storage` only: never in a message, a log line or a repr.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from airflow_provider_sparkk8s.errors import SparkConfError, SparkK8sError
from airflow_provider_sparkk8s.submission.hadoop_env import expand_env_references
from airflow_provider_sparkk8s.submission.storage_options import (
    secret_values,
    spark_conf_storage_options,
)
from airflow_provider_sparkk8s.submission.upload_plan import (
    UPLOAD_PATH_KEY,
    Upload,
    UploadPlan,
    local_path,
)
from airflow_provider_sparkk8s.submission.uris import uri_scheme

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

# scheme -> (extra to install, the fsspec backend module it brings)
BACKENDS = {
    "s3": ("s3", "s3fs"),
    "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"),
    "gcs": ("gcs", "gcsfs"),
    "abfs": ("azure", "adlfs"),
    "abfss": ("azure", "adlfs"),
    "az": ("azure", "adlfs"),
    "wasb": ("azure", "adlfs"),
    "wasbs": ("azure", "adlfs"),
}
# The fsspec protocol a scheme is served as: s3fs knows no s3a://, adlfs no wasb(s)://
# (`wasbs://container@account.blob.core.windows.net/path` is the same blob to adlfs).
SERVED_AS = {"s3a": "s3", "wasb": "abfs", "wasbs": "abfs"}
DISTRIBUTION = "airflow-provider-sparkk8s"


class UploadError(SparkK8sError):
    """A file could not be uploaded; whatever this submission wrote has been removed."""


def protocol_of(url: str) -> str:
    scheme = uri_scheme(url)
    return "file" if scheme is None else scheme


def check_backend(url: str) -> None:
    """Refuse, before anything is written, a scheme with no fsspec backend installed."""
    protocol = protocol_of(url)
    if protocol == "file":
        return
    if protocol not in BACKENDS:
        accepted = (
            "s3a://, s3://, gs://, abfs://, abfss://, az://, wasb://, wasbs://, file:// "
            "or a local path"
        )
        raise SparkConfError(UPLOAD_PATH_KEY, url, accepted)
    extra, module = BACKENDS[protocol]
    import importlib.util  # here: only a remote upload path needs it (start-up time)

    if importlib.util.find_spec(module) is None:
        raise SparkConfError(
            UPLOAD_PATH_KEY,
            url,
            f"a {protocol}:// path with its backend installed",
            f"install the [{extra}] extra: pip install '{DISTRIBUTION}[{extra}]'",
        )


@dataclass
class Storage:
    """fsspec file systems for the upload path, built from per-protocol options.

    `options` maps a protocol (`s3`, `gs`, ...) to fsspec keyword arguments (endpoint,
    credentials); `filesystems` maps a protocol to a ready file system (Airflow's
    ObjectStoragePath gives one). Secret values are scrubbed from every error message.
    """

    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    filesystems: dict[str, Any] = field(default_factory=dict, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_spark_conf(cls, spark_conf: Mapping[str, str]) -> Storage:
        """As spark-submit finds credentials: `spark.hadoop.fs.s3a.*` keys, else the
        backend's own lookup in the environment; `${env.NAME}` in a `spark.hadoop.*` value
        reads this process's environment, as Hadoop does in spark-submit's JVM."""
        spark_conf = expand_env_references(spark_conf, os.environ)
        return cls(spark_conf_storage_options(spark_conf), secrets=secret_values(spark_conf))

    def filesystem(self, url: str) -> tuple[Any, str]:
        """(fsspec file system, path inside it) for `url`."""
        protocol = protocol_of(url)
        if protocol == "file":
            from fsspec.implementations.local import LocalFileSystem

            return LocalFileSystem(), local_path(url)
        check_backend(url)
        fs = self.filesystems.get(protocol)
        if fs is None:
            import fsspec

            # Options are looked up under the scheme's name, then what it is served as.
            key = SERVED_AS.get(protocol, protocol)
            options = self.options.get(protocol) or self.options.get(key) or {}
            # A file system of its own: fsspec's instance cache would hand a later submission
            # one built from the credentials the environment held earlier (a rotated key).
            options = {**options, "skip_instance_cache": True}
            if key in ("gs", "gcs") and _custom_gcs_endpoint(options):
                fs = _plain_gcs_filesystem(options)
            else:
                fs = fsspec.filesystem(key, **options)
            self.filesystems[protocol] = fs
        if protocol in ("wasb", "wasbs"):
            url = "abfs://" + url.split("://", 1)[1]
        return fs, fs._strip_protocol(url)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text


def _custom_gcs_endpoint(options: Mapping[str, Any]) -> bool:
    return bool(options.get("endpoint_url") or os.environ.get("STORAGE_EMULATOR_HOST"))


def _plain_gcs_filesystem(options: Mapping[str, Any]) -> Any:
    """gcsfs' JSON-API file system, for an endpoint that is not Google's (an emulator).

    gcsfs 2026.x serves gs:// by default with a subclass that first asks the Storage Control
    gRPC API for each bucket's layout, at the same host; an emulator does not serve it (the
    TLS handshake with fake-gcs-server's plain HTTP port fails), the lookup is retried for
    60 s, and not cached when it fails: every call waited a minute. Uploads need only the
    JSON API, which both serve."""
    from gcsfs.core import GCSFileSystem  # type: ignore[import-untyped]

    return GCSFileSystem(**options)


@dataclass
class UploadedFiles:
    """The folders one submission wrote; `remove` deletes them (and what is in them)."""

    storage: Storage = field(repr=False)
    directories: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)

    def remove(self) -> list[str]:
        """Delete every folder; returns those that could not be removed (with why)."""
        left = []
        for directory in reversed(self.directories):
            try:
                fs, path = self.storage.filesystem(directory)
                if fs.exists(path):
                    fs.rm(path, recursive=True)
                fs.invalidate_cache()
            except Exception as error:  # noqa: BLE001 - report every folder, not the first
                left.append(f"{directory} ({self.storage.scrub(_describe(error))})")
        return left


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def check_sources(plan: UploadPlan) -> dict[str, int]:
    """Every file to upload is a readable regular file; returns source -> size in bytes.

    spark-submit uploads the files one by one and fails at the first missing one, leaving
    the earlier copies behind; we look at all of them before writing anything.
    """
    sizes = {}
    for upload in plan.uploads:
        problem = _source_problem(upload.source)
        if problem is not None:
            raise SparkConfError(upload.key, upload.entry, "a readable local file", problem)
        sizes[upload.source] = os.path.getsize(upload.source)
    return sizes


def _source_problem(path: str) -> str | None:
    if not os.path.lexists(path):
        return "no such file"
    if os.path.isdir(path):
        return "it is a directory"
    if not os.path.isfile(path):
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "not readable"
    return None


def _put(storage: Storage, upload: Upload, size: int) -> None:
    fs, directory = storage.filesystem(upload.directory)
    _, target = storage.filesystem(upload.target)
    fs.makedirs(directory, exist_ok=True)
    fs.put_file(upload.source, target)
    fs.invalidate_cache(target)
    written = fs.info(target).get("size")
    if written != size:
        raise UploadError(f"{upload.target} holds {written} bytes after the upload, not {size}")


def upload_all(
    plan: UploadPlan,
    storage: Storage,
    on_upload: Callable[[Upload], None] | None = None,
) -> UploadedFiles:
    """Upload every file of `plan`, in order; on any failure remove them all and raise."""
    if plan.upload_path is not None and plan.uploads:
        check_backend(plan.upload_path)
    sizes = check_sources(plan)
    done = UploadedFiles(storage)
    current: Upload | None = None
    try:
        for current in plan.uploads:
            done.directories.append(current.directory)  # a partial write is removed too
            _put(storage, current, sizes[current.source])
            done.targets.append(current.target)
            if on_upload is not None:
                on_upload(current)
    except BaseException as error:
        left = done.remove()
        if not isinstance(error, Exception) or current is None:
            raise
        message = (
            f"could not upload {current.entry} ({current.key}) to {current.target}: "
            f"{storage.scrub(_describe(error))}"
        )
        message += f"; could NOT remove: {', '.join(left)}" if left else "; nothing was left"
        raise UploadError(message) from None
    return done
