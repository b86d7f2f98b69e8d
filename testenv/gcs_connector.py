"""The GCS connector of each Spark image: Google's gcs-connector (shaded), at the release line
built for the Hadoop client the Spark release ships (testenv/hadoop_aws.hadoop_version).

pyspark's distribution has no gs:// file system, so a driver cannot read `gs://` out of the
box; a user's image adds this jar to `$SPARK_HOME/jars`, and so do the test images
(testenv/runtime_image.py). testenv/fetch_gcs_connector.sh fetches it through Maven, cached
under ~/.cache keyed by the connector's version.

    python -m testenv.gcs_connector --all    # every real-Spark line's (prints the folders)
"""

from __future__ import annotations

import sys
from pathlib import Path

from testenv.processes import script_output

FETCH_SCRIPT = Path(__file__).resolve().parent / "fetch_gcs_connector.sh"
# Hadoop minor -> connector release. The 4.0 line is built against Hadoop 3.4 (Spark 4.0 and
# 4.1); Hadoop 3.5 (Spark 4.2, 4.3) has no line of its own yet and takes 4.0, with the conf
# below. The 3.0 line, built against Hadoop 3.3.6, fails on Spark 3.5's 3.3.4 when it opens a
# file (NoClassDefFoundError: org/apache/hadoop/fs/Options$OpenFileOptions, from 3.3.5), so
# Spark 3.5 takes the 2.2 line's Hadoop 3 build (built against 3.2), whose auth keys are the
# 2.x ones. Releases with a `shaded` jar on Maven Central (3.0.23, 3.1.16, 4.0.8, 4.0.9 and
# hadoop3-2.2.34 publish none).
RELEASES = {"3.3": "hadoop3-2.2.22", "3.4": "4.0.4", "3.5": "4.0.4"}
# Hadoop 3.5 ships its own GCS file system's defaults in core-default.xml (the class itself
# is not in Spark's jars): `fs.gs.impl` names it, and `fs.gs.block.size` says `64m`, which
# this connector reads as a plain long (NumberFormatException: For input string: "64m").
# The connector's other sizes there (8m, 2m, 512m) it reads with units.
HADOOP_35_CONF = {
    "fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
    "fs.AbstractFileSystem.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS",
    "fs.gs.block.size": str(64 * 1024 * 1024),
}


def _minor(hadoop: str) -> str:
    return ".".join(hadoop.split(".")[:2])


def release_for(hadoop: str) -> str | None:
    """The connector release for Hadoop `hadoop` (`3.5.0` -> `4.0.4`), None if none fits."""
    return RELEASES.get(_minor(hadoop))


def hadoop_conf(hadoop: str, endpoint: str) -> dict[str, str]:
    """The `spark.hadoop.*` keys a driver with this connector needs to read `gs://` from an
    emulator at `endpoint` over plain HTTP with no credentials: its root URL and no auth
    (3.x and later: auth.type UNAUTHENTICATED; 2.x: auth.null.enable with the service account
    off; our upload reads these), and on Hadoop 3.5
    the keys that put this connector in place of the one core-default.xml names."""
    conf = {"fs.gs.storage.root.url": endpoint.rstrip("/") + "/"}
    if _minor(hadoop) == "3.3":
        # The 2.x connector has no auth.type; with its service account left on (the default)
        # it asks the GCE metadata server for a token even when null credentials are on.
        conf["fs.gs.auth.service.account.enable"] = "false"
        conf["fs.gs.auth.null.enable"] = "true"
    else:
        conf["fs.gs.auth.type"] = "UNAUTHENTICATED"
    if _minor(hadoop) == "3.5":
        conf |= HADOOP_35_CONF
    return {f"spark.hadoop.{key}": value for key, value in conf.items()}


def fetch(release: str) -> Path:
    """The folder holding gcs-connector `release`'s shaded jar, fetched first if not cached."""
    return script_output(FETCH_SCRIPT, release)


if __name__ == "__main__":
    from testenv.hadoop_aws import hadoop_version
    from testenv.runtime_image import RUNTIME_VERSIONS, distribution_jars, pyspark_venv

    versions = RUNTIME_VERSIONS if sys.argv[1:] == ["--all"] else tuple(sys.argv[1:])
    for spark in versions:
        hadoop = hadoop_version(distribution_jars(pyspark_venv(spark)))
        release = release_for(hadoop) if hadoop else None
        print(f"{spark}: {fetch(release) if release else 'no GCS connector for this Hadoop'}")
