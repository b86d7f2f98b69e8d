"""`${env.NAME}` in `spark.hadoop.*` values, expanded as spark-submit's own upload would: pure.

Hadoop's `Configuration` expands `${env.NAME}` from the reading process's environment when a
key is read. spark-submit uploads through Hadoop's file systems in its own JVM, so a key such
as `spark.hadoop.fs.azure.account.key.<host>=${env.AZURE_ACCOUNT_KEY}` reads the submitting
machine's variable there, and the driver's (a `secretKeyRef` from a Kubernetes Secret) in
the pod; spark.properties holds only the reference. Our upload reads the same keys, so it
expands them from the submitting process's environment first. A variable that is not set is
left as written, as Hadoop leaves it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

HADOOP_PREFIX = "spark.hadoop."
_REFERENCE = r"\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}"  # compiled by re on first use


def expand_env_references(
    spark_conf: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """`spark_conf` with every set `${env.NAME}` in a `spark.hadoop.*` value replaced by
    `environ[NAME]`; other keys as they are (Spark's own keys use `${env:NAME}`, which Spark
    itself expands where it does at all)."""

    def expand(value: str) -> str:
        return re.sub(_REFERENCE, lambda found: environ.get(found.group(1), found.group(0)), value)

    return {
        key: expand(value) if key.startswith(HADOOP_PREFIX) and "${env." in value else value
        for key, value in spark_conf.items()
    }
