"""Warnings for an `abfs[s]://` upload path the driver will read through Hadoop 3.5.0's ABFS
(the Hadoop of Spark 4.2 and 4.3): pure. Both were seen on a real 4.3.0 driver against
Azurite (tests/runtime/test_azure_uploads_real_spark.py); neither is refused, since our adlfs
upload goes through either way and the user may know better.

- The driver never exits. ABFS's metrics (`fs.azure.metrics.collection.enabled`, true by
  default from 3.5.0) start a non-daemon scheduler thread per client, stopped only when the
  file system closes, which Hadoop does in a shutdown hook: the JVM waits for those threads
  before it runs its hooks, so the driver pod stays Running after the program ends. Hadoop
  reads the unqualified key only.
- Plain HTTP fails. 3.5.0's default HTTP client (`fs.azure.networking.library`:
  APACHE_HTTP_CLIENT; 3.4's was the JDK's) refuses an `http` endpoint: "SSL socket factory
  may not be null".
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_sparkk8s.submission.spark_line import check_spark_version
from airflow_provider_sparkk8s.submission.upload_plan import UPLOAD_PATH_KEY

AZURE = "spark.hadoop.fs.azure."
METRICS = AZURE + "metrics.collection.enabled"
EXIT_ON_MAIN_EXIT = "spark.submit.callSystemExitOnMainExit"
NETWORKING = AZURE + "networking.library"
ALWAYS_HTTPS = AZURE + "always.use.https"


def _on_hadoop_35(upload_path: str | None, spark_version: str, schemes: tuple[str, ...]) -> bool:
    if not upload_path or not upload_path.startswith(tuple(f"{s}://" for s in schemes)):
        return False
    return check_spark_version(spark_version)[:2] >= (4, 2)


def _is(value: str | None, expected: str) -> bool:
    return value is not None and value.strip().lower() == expected


def abfs_exit_warning(
    upload_path: str | None, spark_conf: Mapping[str, str], spark_version: str
) -> str | None:
    """A warning when the driver's ABFS metrics would keep its JVM from exiting."""
    if not _on_hadoop_35(upload_path, spark_version, ("abfs", "abfss")):
        return None
    if _is(spark_conf.get(METRICS), "false") or _is(spark_conf.get(EXIT_ON_MAIN_EXIT), "true"):
        return None
    return (
        f"{UPLOAD_PATH_KEY}={upload_path} on Spark {spark_version} (Hadoop 3.5.0): its ABFS "
        f"client keeps non-daemon metrics threads until the file system closes at JVM "
        f"shutdown, so the driver pod stays Running after the program ends. Set "
        f"{METRICS}=false or {EXIT_ON_MAIN_EXIT}=true."
    )


def abfs_plain_http_warning(
    upload_path: str | None, spark_conf: Mapping[str, str], spark_version: str
) -> str | None:
    """A warning when the driver's ABFS would refuse the plain HTTP endpoint it is given."""
    if not _on_hadoop_35(upload_path, spark_version, ("abfs",)):
        return None
    if not _is(spark_conf.get(ALWAYS_HTTPS), "false") or spark_conf.get(NETWORKING):
        return None
    return (
        f"{ALWAYS_HTTPS}=false with no {NETWORKING} on Spark {spark_version} (Hadoop 3.5.0): "
        f"its default HTTP client for ABFS refuses plain HTTP ('SSL socket factory may not be "
        f"null'), so the driver cannot read {upload_path}. Set "
        f"{NETWORKING}=JDK_HTTP_URL_CONNECTION."
    )
