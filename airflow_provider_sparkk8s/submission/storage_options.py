"""fsspec options for the upload path from what a spark-submit user already has: pure.

spark-submit uploads through Hadoop's file system, configured by `spark.hadoop.fs.s3a.*`
keys (S3A), `spark.hadoop.fs.gs.*` keys (the GCS connector) and `spark.hadoop.fs.azure.*`
keys (hadoop-azure: submission/azure_options.py); a user who has them set
expects the same submission to work here. What they do not set is left to the backend's own
lookup in the environment (s3fs: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_SESSION_TOKEN`, `AWS_ENDPOINT_URL`, `AWS_PROFILE`; gcsfs:
`GOOGLE_APPLICATION_CREDENTIALS`, `STORAGE_EMULATOR_HOST`; adlfs: `AZURE_STORAGE_*`, among
them `AZURE_STORAGE_CONNECTION_STRING`, the only way to an emulator's endpoint), which is
how `sparkk8s-submit` gets credentials.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.azure_options import (
    SCHEMES as AZURE_SCHEMES,
)
from airflow_provider_sparkk8s.submission.azure_options import (
    azure_options,
    azure_secret_values,
)
from airflow_provider_sparkk8s.submission.spark_line import check_spark_version
from airflow_provider_sparkk8s.submission.upload_plan import UPLOAD_PATH_KEY

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

S3A = "spark.hadoop.fs.s3a."
SECRET_S3A_KEYS = ("secret.key", "session.token")
GS = "spark.hadoop.fs.gs."
GS_ROOT_URL = GS + "storage.root.url"
GS_AUTH_TYPE = GS + "auth.type"
GS_KEYFILE = GS + "auth.service.account.json.keyfile"
GS_PROJECT = GS + "project.id"
# The GCS connector's (3.x) auth types; those it resolves from the machine are left to
# gcsfs' own lookup, which finds the same application-default or metadata credentials.
GS_AUTH_TYPES = (
    "UNAUTHENTICATED",
    "SERVICE_ACCOUNT_JSON_KEYFILE",
    "APPLICATION_DEFAULT",
    "COMPUTE_ENGINE",
    "ACCESS_TOKEN_PROVIDER",
    "USER_CREDENTIALS",
)


def _true(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() == "true"


def s3_options(spark_conf: Mapping[str, str]) -> dict[str, Any]:
    """s3fs keyword arguments from the `spark.hadoop.fs.s3a.*` keys that are set."""
    s3a = {key[len(S3A) :]: value for key, value in spark_conf.items() if key.startswith(S3A)}
    options: dict[str, Any] = {}
    client: dict[str, Any] = {}
    endpoint = s3a.get("endpoint")
    if endpoint:
        if "://" not in endpoint:  # Hadoop adds the scheme from connection.ssl.enabled
            ssl = _true(s3a.get("connection.ssl.enabled"), True)
            endpoint = ("https://" if ssl else "http://") + endpoint
        client["endpoint_url"] = endpoint
    region = s3a.get("endpoint.region")
    if region:
        client["region_name"] = region
    if client:
        options["client_kwargs"] = client
    if s3a.get("access.key") and s3a.get("secret.key"):
        options["key"] = s3a["access.key"]
        options["secret"] = s3a["secret.key"]
        if s3a.get("session.token"):
            options["token"] = s3a["session.token"]
    if _true(s3a.get("path.style.access"), False):
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return options


def s3a_region_warning(
    upload_path: str | None, spark_conf: Mapping[str, str], spark_version: str
) -> str | None:
    """A warning when the driver will read `s3a://` uploads from an endpoint that is not
    AWS's with no region set. S3A from Hadoop 3.4 (the Hadoop of Spark 4.x) then signs for
    us-east-2, and a server that checks the region refuses the driver's downloads (versitygw:
    'the region "us-east-2" is wrong'); s3fs uploads here without it, so the submission
    would go through and fail in the driver. spark-submit uploads through S3A itself, so it
    would meet the refusal at submission. Never refused: many servers accept any region."""
    if not upload_path or not upload_path.startswith("s3a://"):
        return None
    if check_spark_version(spark_version)[0] < 4:
        return None  # the us-east-2 rule came with Hadoop 3.4; Spark 3.5 ships 3.3
    bucket = urlsplit(upload_path).netloc

    def setting(name: str) -> str | None:
        return spark_conf.get(f"{S3A}bucket.{bucket}.{name}") or spark_conf.get(S3A + name)

    endpoint = setting("endpoint")
    if not endpoint or setting("endpoint.region"):
        return None
    host = urlsplit(endpoint if "://" in endpoint else "//" + endpoint).hostname or ""
    if host.endswith((".amazonaws.com", ".amazonaws.com.cn")):
        return None
    return (
        f"{S3A}endpoint={endpoint} has no {S3A}endpoint.region: the driver's S3A (Spark "
        f"{spark_version}, Hadoop 3.4 or later) signs for us-east-2 at an endpoint that is not "
        f"AWS's, and a server that checks the region refuses its reads of {upload_path}. "
        f"Set {S3A}endpoint.region to the server's region (often us-east-1)."
    )


def gcs_connector_warning(
    upload_path: str | None, spark_conf: Mapping[str, str], spark_version: str
) -> str | None:
    """A warning when the driver will read `gs://` uploads on Spark 4.2 or later (Hadoop 3.5)
    with no `spark.hadoop.fs.gs.impl`. Hadoop 3.5's core-default.xml names its own GCS file
    system there (hadoop-gcp, which Spark's distribution does not ship) and sets
    `fs.gs.block.size=64m`, which Google's gcs-connector reads as a plain number: the driver
    fails (ClassNotFoundException, then NumberFormatException), while our gcsfs upload goes
    through. Never refused: an image may carry hadoop-gcp itself."""
    if not upload_path or not upload_path.startswith("gs://"):
        return None
    if check_spark_version(spark_version)[:2] < (4, 2) or spark_conf.get(GS + "impl"):
        return None
    return (
        f"{UPLOAD_PATH_KEY}={upload_path} on Spark {spark_version} (Hadoop 3.5): its "
        f"core-default.xml names Hadoop's own GCS file system for gs://, which Spark's "
        f"distribution does not ship. With Google's gcs-connector in the image, set "
        f"{GS}impl=com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem and "
        f"{GS}block.size=67108864 (in bytes: the connector cannot read Hadoop's 64m), or the "
        f"driver cannot read its uploads."
    )


def secret_values(spark_conf: Mapping[str, str]) -> tuple[str, ...]:
    """The credential values found in the conf, to scrub from error messages."""
    s3 = tuple(value for name in SECRET_S3A_KEYS if (value := spark_conf.get(S3A + name)))
    return s3 + azure_secret_values(spark_conf)


def gcs_options(spark_conf: Mapping[str, str]) -> dict[str, Any]:
    """gcsfs keyword arguments from the GCS connector's `spark.hadoop.fs.gs.*` keys.

    `storage.root.url` is the connector's endpoint (an emulator's, or a private one), gcsfs'
    `endpoint_url`: scheme and host only, as both take it. `auth.type` UNAUTHENTICATED sends
    no credentials; SERVICE_ACCOUNT_JSON_KEYFILE reads the key file named by
    `auth.service.account.json.keyfile` (a path on this machine: the secret stays in the file).
    Without `auth.type`, the 2.x connector's `auth.null.enable` and key file count the same.
    """
    options: dict[str, Any] = {}
    root_url = spark_conf.get(GS_ROOT_URL)
    if root_url:
        parts = urlsplit(root_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/"):
            raise SparkConfError(
                GS_ROOT_URL, root_url, "an http:// or https:// URL with no path, such as "
                "https://storage.googleapis.com/",
            )  # fmt: skip
        options["endpoint_url"] = f"{parts.scheme}://{parts.netloc}"
    auth_type = spark_conf.get(GS_AUTH_TYPE)
    if auth_type is not None:
        if auth_type.strip().upper() not in GS_AUTH_TYPES:
            raise SparkConfError(GS_AUTH_TYPE, auth_type, "one of " + ", ".join(GS_AUTH_TYPES))
        auth_type = auth_type.strip().upper()
    if auth_type is None:
        auth_type = _gcs_2x_auth_type(spark_conf)
    if auth_type == "UNAUTHENTICATED":
        options["token"] = "anon"
    elif auth_type == "SERVICE_ACCOUNT_JSON_KEYFILE":
        keyfile = spark_conf.get(GS_KEYFILE)
        if not keyfile:
            raise SparkConfError(
                GS_KEYFILE, None, "the path of a service account's JSON key file",
                f"{GS_AUTH_TYPE}=SERVICE_ACCOUNT_JSON_KEYFILE reads it",
            )  # fmt: skip
        options["token"] = keyfile
    if spark_conf.get(GS_PROJECT):
        options["project"] = spark_conf[GS_PROJECT]
    return options


def _gcs_2x_auth_type(spark_conf: Mapping[str, str]) -> str | None:
    """The 2.x connector's (the one for Hadoop 3.3 and Spark 3.5) boolean switches, which 3.x
    replaced by `auth.type`: `auth.null.enable`, else a key file with the service account on."""
    if _true(spark_conf.get(GS + "auth.null.enable"), False):
        return "UNAUTHENTICATED"
    if spark_conf.get(GS_KEYFILE) and _true(
        spark_conf.get(GS + "auth.service.account.enable"), True
    ):
        return "SERVICE_ACCOUNT_JSON_KEYFILE"
    return None


def spark_conf_storage_options(spark_conf: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Options per fsspec protocol. The GCS and Azure keys are read (and refused when wrong)
    only for an upload path in that store, as Hadoop reads a store's keys only when it is
    used."""
    options: dict[str, dict[str, Any]] = {"s3": s3_options(spark_conf)}
    upload_path = spark_conf.get(UPLOAD_PATH_KEY) or ""
    if upload_path.startswith(("gs://", "gcs://")):
        options["gs"] = options["gcs"] = gcs_options(spark_conf)
    if upload_path.startswith(tuple(f"{scheme}://" for scheme in AZURE_SCHEMES)):
        azure = azure_options(spark_conf, upload_path)
        options |= dict.fromkeys(AZURE_SCHEMES, azure)
    return options


def s3_options_from_connection(
    login: str | None, password: str | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """s3fs keyword arguments from an Airflow `aws` connection's fields, for when no provider
    maps the connection to a file system itself (the amazon provider does, through Airflow's
    ObjectStoragePath, and is used first). Unset fields are left to the environment."""
    options: dict[str, Any] = {}
    if login and password:
        options["key"] = login
        options["secret"] = password
        if extra.get("aws_session_token"):
            options["token"] = extra["aws_session_token"]
    s3_service = (extra.get("service_config") or {}).get("s3") or {}
    client = {
        name: value
        for name, value in (
            ("endpoint_url", s3_service.get("endpoint_url") or extra.get("endpoint_url")),
            ("region_name", extra.get("region_name")),
        )
        if value
    }
    if client:
        options["client_kwargs"] = client
    if (extra.get("config_kwargs") or {}).get("s3", {}).get("addressing_style") == "path":
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return options
