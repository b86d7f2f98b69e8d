"""`--packages`, `--exclude-packages` and `--repositories`, passed through as spark-submit
passes them in cluster mode: pure.

spark-submit writes them into the driver's properties as `spark.jars.packages`,
`spark.jars.excludes` and `spark.jars.repositories`, and the driver resolves them with Ivy
in the pod. It also resolves them on the submitting side, only to put the jars on its own
class path (where nothing that is sent can see them); we skip that resolution and keep its
checks: the coordinates' form, and an Ivy settings file that must exist.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf_values import split_list

PACKAGES_KEY = "spark.jars.packages"
EXCLUDES_KEY = "spark.jars.excludes"
REPOSITORIES_KEY = "spark.jars.repositories"
IVY_SETTINGS_KEY = "spark.jars.ivySettings"
# flag -> conf key; the flag wins over the key, as in spark-submit
PACKAGE_FLAGS = {
    "--packages": PACKAGES_KEY,
    "--exclude-packages": EXCLUDES_KEY,
    "--repositories": REPOSITORIES_KEY,
}


def _parts(coordinate: str) -> list[str]:
    # Spark accepts '/' for ':' (spark-packages style) before it splits.
    return coordinate.replace("/", ":").split(":")


def check_packages(conf: dict[str, str], ivy_settings_exists: bool | None) -> None:
    """Spark's checks on the submitting side, before anything is sent.

    `ivy_settings_exists`: whether `spark.jars.ivySettings` names an existing regular file
    (None when the key is not set).
    """
    for coordinate in split_list(conf.get(PACKAGES_KEY)):
        parts = _parts(coordinate)
        if len(parts) != 3 or not all(parts):
            raise SparkConfError(
                PACKAGES_KEY, coordinate, "Maven coordinates groupId:artifactId:version"
            )
    for exclusion in split_list(conf.get(EXCLUDES_KEY)):
        parts = _parts(exclusion)
        if len(parts) != 2 or not all(parts):
            raise SparkConfError(EXCLUDES_KEY, exclusion, "groupId:artifactId")
    if ivy_settings_exists is False:
        raise SparkConfError(
            IVY_SETTINGS_KEY,
            conf.get(IVY_SETTINGS_KEY),
            "the path of an existing Ivy settings file on the submitting machine",
            "spark-submit refuses a missing one before it sends anything",
        )
