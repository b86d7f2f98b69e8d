"""The Azure connector of each Spark image: hadoop-azure (ABFS and WASB) and what it needs at
run time, at the version of the Hadoop client the Spark release ships (as testenv/hadoop_aws.py).

pyspark's distribution has no hadoop-azure, so a driver cannot read `abfs://` or `wasb://`
out of the box; a user's image adds these jars to `$SPARK_HOME/jars`, and so do the test
images (testenv/runtime_image.py). testenv/fetch_hadoop_azure.sh fetches them through
Maven, cached under ~/.cache keyed by the Hadoop version.

Azurite serves the Blob API only (no ADLS Gen2 `dfs` endpoint). ABFS from Hadoop 3.4.2 has a
client of the Blob API (`fs.azure.fns.account.service.type=BLOB`, its AbfsBlobClient), so a
driver on Spark 4.1+ reads Azurite through `abfs://`. Hadoop 3.4.1 and 3.3.4 have only the
DFS client, and WASB, whose emulator mode is fixed to 127.0.0.1:10000 (a port a test cannot
take on a shared machine).

    python -m testenv.hadoop_azure --all    # every real-Spark line's (prints the folders)
"""

from __future__ import annotations

import sys
from pathlib import Path

from testenv.processes import script_output

FETCH_SCRIPT = Path(__file__).resolve().parent / "fetch_hadoop_azure.sh"


def reads_blob_endpoint(hadoop: str) -> bool:
    """Whether this Hadoop's ABFS has the Blob-endpoint client (3.4.2 on)."""
    return tuple(int(part) for part in hadoop.split(".")[:3]) >= (3, 4, 2)


def abfs_emulator_conf(endpoint: str) -> dict[str, str]:
    """The `spark.hadoop.*` keys, besides the account key, that put ABFS (3.4.2 on) on an
    emulator's Blob endpoint `endpoint` (`host:port`, plain HTTP), for
    `abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/...`. The JDK's HTTP client: the default
    Apache one refuses plain HTTP (`IllegalArgumentException: SSL socket factory may not be
    null`, seen on 4.3.0)."""
    conf = {
        "fs.azure.abfs.endpoint": endpoint,
        "fs.azure.always.use.https": "false",
        "fs.azure.fns.account.service.type": "BLOB",
        "fs.azure.networking.library": "JDK_HTTP_URL_CONNECTION",
    }
    return {f"spark.hadoop.{key}": value for key, value in conf.items()}


def fetch(hadoop: str) -> Path:
    """The folder of hadoop-azure `hadoop`'s jars, fetched first if not cached."""
    return script_output(FETCH_SCRIPT, hadoop)


if __name__ == "__main__":
    from testenv.hadoop_aws import hadoop_version
    from testenv.runtime_image import RUNTIME_VERSIONS, distribution_jars, pyspark_venv

    versions = RUNTIME_VERSIONS if sys.argv[1:] == ["--all"] else tuple(sys.argv[1:])
    for spark in versions:
        hadoop = hadoop_version(distribution_jars(pyspark_venv(spark)))
        print(f"{spark}: {fetch(hadoop) if hadoop else 'no Hadoop client jar'}")
