"""The S3A connector of each Spark image: hadoop-aws and the AWS SDK modules it loads, at
the version of the Hadoop client the Spark release ships (its `hadoop-client-api-<v>.jar`).

pyspark's distribution has no hadoop-aws, so a driver cannot read `s3a://` out of the box;
a user's image adds these jars to `$SPARK_HOME/jars`, and so do the test images
(testenv/runtime_image.py). testenv/fetch_hadoop_aws.sh fetches them through Maven, cached
under ~/.cache keyed by the Hadoop version.

    python -m testenv.hadoop_aws --all    # every real-Spark line's (prints the folders)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from testenv.processes import script_output

FETCH_SCRIPT = Path(__file__).resolve().parent / "fetch_hadoop_aws.sh"
_HADOOP_CLIENT = re.compile(r"^hadoop-client-api-(\d[^/]*)\.jar$")
_ARTIFACT = re.compile(r"^(.+?)-\d[^-]*(?:-.*)?\.jar$")
# Classes the distribution already has under another artifact's name: Spark routes
# commons-logging through slf4j (jcl-over-slf4j holds the same package).
_PROVIDED_AS = {"commons-logging": "jcl-over-slf4j"}


def hadoop_version(distribution_jars: Path) -> str | None:
    """The Hadoop release a Spark distribution's jars folder ships, None when it has none."""
    for path in sorted(distribution_jars.iterdir()):
        found = _HADOOP_CLIENT.match(path.name)
        if found:
            return found.group(1)
    return None


def artifact_name(jar: str) -> str:
    """`s3-transfer-manager-2.24.5.jar` -> `s3-transfer-manager`."""
    found = _ARTIFACT.match(jar)
    return found.group(1) if found else jar.removesuffix(".jar")


def jars_to_add(connector: Iterable[str], distribution: Iterable[str]) -> list[str]:
    """The connector's jars the distribution lacks: one of an artifact the distribution
    already ships (netty, httpclient, jackson, ...) is left out, so Spark's own version is
    the only one on the classpath."""
    shipped = {artifact_name(name) for name in distribution}

    def shipped_already(artifact: str) -> bool:
        return artifact in shipped or _PROVIDED_AS.get(artifact) in shipped

    return sorted(name for name in connector if not shipped_already(artifact_name(name)))


def fetch(hadoop: str) -> Path:
    """The folder of hadoop-aws `hadoop`'s jars, fetched first if not cached."""
    return script_output(FETCH_SCRIPT, hadoop)


if __name__ == "__main__":
    from testenv.runtime_image import RUNTIME_VERSIONS, distribution_jars, pyspark_venv

    versions = RUNTIME_VERSIONS if sys.argv[1:] == ["--all"] else tuple(sys.argv[1:])
    for spark in versions:
        hadoop = hadoop_version(distribution_jars(pyspark_venv(spark)))
        print(f"{spark}: {fetch(hadoop) if hadoop else 'no Hadoop client jar'}")
