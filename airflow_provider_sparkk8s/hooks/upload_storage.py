"""SparkK8sUploadStorageHook: where the operator's uploads go, and their removal with the driver.

With `upload_conn_id`, Airflow's ObjectStoragePath maps the connection to an fsspec file
system where a provider registers one for the scheme (the amazon provider for `s3://`, the
google one for `gs://`, ...); an `aws` connection without that provider is mapped here
(key, secret, session token, endpoint, region). Without a connection, the
`spark.hadoop.fs.s3a.*` keys and the backend's environment are used, as in sparkk8s-submit.

Not in provider_info: the hook has no connection type of its own (it reads whichever
connection the storage's provider defines), and Airflow registers hooks by connection type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.submit.uploader import Storage, UploadedFiles, protocol_of
from airflow_provider_sparkk8s.submission.storage_options import s3_options_from_connection
from airflow_provider_sparkk8s.version_compat import BaseHook, mask_secret, object_storage_fs

S3_PROTOCOLS = ("s3", "s3a")


class SparkK8sUploadStorageHook(BaseHook):
    """fsspec storage for `spark.kubernetes.file.upload.path`.

    :param upload_conn_id: the storage's connection; None: the Spark conf and environment.
    """

    conn_name_attr = "upload_conn_id"
    hook_name = "Spark on Kubernetes upload storage"

    def __init__(self, upload_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.upload_conn_id = upload_conn_id

    def storage(self, upload_path: str | None, spark_conf: Mapping[str, str]) -> Storage:
        """The Storage for `upload_path`, credentials from the connection or the Spark conf
        and environment (`spark_conf`: the submission's properties)."""
        if not self.upload_conn_id or not upload_path:
            return Storage.from_spark_conf(spark_conf)
        protocol = protocol_of(upload_path)
        try:
            fs = object_storage_fs(upload_path, self.upload_conn_id)
        except ValueError:
            fs = None  # no provider maps this scheme; an aws connection is mapped below
        if fs is not None:
            return Storage(filesystems={protocol: fs})
        if protocol not in S3_PROTOCOLS:
            raise SparkConfError(
                "upload_conn_id",
                self.upload_conn_id,
                f"a connection a provider maps to a {protocol}:// file system",
                "install the Airflow provider for that storage, or leave upload_conn_id "
                "unset to use the environment's credentials",
            )
        connection = self.get_connection(self.upload_conn_id)
        if connection.password:
            mask_secret(connection.password)
        options = s3_options_from_connection(
            connection.login, connection.password, connection.extra_dejson or {}
        )
        secrets = tuple(v for v in (connection.password, options.get("token")) if v)
        return Storage({"s3": options}, secrets=secrets)

    def remove(self, directories: Sequence[str], spark_conf: Mapping[str, str]) -> list[str]:
        """Delete the spark-upload-<uuid> folders of a finished application; returns those
        that could not go (with why; never a credential)."""
        if not directories:
            return []
        upload_path = directories[0].rsplit("/", 1)[0]
        try:
            storage = self.storage(upload_path, spark_conf)
        except Exception as error:  # noqa: BLE001 - reported as left, the result stands
            return [f"{upload_path} ({type(error).__name__})"]
        return UploadedFiles(storage, directories=list(directories)).remove()
