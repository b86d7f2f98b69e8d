"""Where the operator's uploads go, and their removal when the driver goes.

With `upload_conn_id`, Airflow's ObjectStoragePath maps the connection to an fsspec file
system where a provider registers one for the scheme (the amazon provider for `s3://`, the
google one for `gs://`, ...); an `aws` connection without that provider is mapped here
(key, secret, session token, endpoint, region). Without a connection, the
`spark.hadoop.fs.s3a.*` keys and the backend's environment are used, as in sparkk8s-submit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.uploader import Storage, UploadedFiles, protocol_of
from airflow_provider_sparkk8s.submission.storage_options import (
    s3_options_from_connection,
    secret_values,
    spark_conf_storage_options,
)
from airflow_provider_sparkk8s.version_compat import BaseHook, mask_secret, object_storage_fs

log = logging.getLogger(__name__)
S3_PROTOCOLS = ("s3", "s3a")


def upload_storage(
    upload_conn_id: str | None, upload_path: str | None, spark_conf: Mapping[str, str]
) -> Storage:
    """The Storage for `upload_path`, credentials from the connection or the environment."""
    if not upload_conn_id or not upload_path:
        return Storage(spark_conf_storage_options(spark_conf), secrets=secret_values(spark_conf))
    protocol = protocol_of(upload_path)
    try:
        fs = object_storage_fs(upload_path, upload_conn_id)
    except ValueError:
        fs = None  # no provider maps this scheme; an aws connection is mapped below
    if fs is not None:
        return Storage(filesystems={protocol: fs})
    if protocol not in S3_PROTOCOLS:
        raise SparkConfError(
            "upload_conn_id",
            upload_conn_id,
            f"a connection a provider maps to a {protocol}:// file system",
            "install the Airflow provider for that storage, or leave upload_conn_id unset "
            "to use the environment's credentials",
        )
    connection = BaseHook.get_connection(upload_conn_id)
    if connection.password:
        mask_secret(connection.password)
    options = s3_options_from_connection(
        connection.login, connection.password, connection.extra_dejson or {}
    )
    secrets = tuple(v for v in (connection.password, options.get("token")) if v)
    return Storage({"s3": options}, secrets=secrets)


def remove_uploads(storage: Storage, directories: Sequence[str]) -> list[str]:
    """Delete the spark-upload-<uuid> folders of a finished application; what could not go."""
    done = UploadedFiles(storage, directories=list(directories))
    return done.remove()
