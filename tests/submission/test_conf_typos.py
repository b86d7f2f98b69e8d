"""Near misses of Spark's conf keys warn, per line; real keys and open families never do
(issue 29, papercut 9)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from airflow_provider_sparkk8s.submission.conf_typos import near_miss, typo_warnings
from airflow_provider_sparkk8s.submission.defined_conf_keys import KEYS, LINES

SCENARIOS = Path(__file__).resolve().parents[1] / "parity" / "scenarios"
VERSIONS = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("spark.executor.memroy", "spark.executor.memory"),
        ("spark.kubernetes.contianer.image", "spark.kubernetes.container.image"),
        ("spark.driver.memoryOverheads", "spark.driver.memoryOverhead"),
        ("spark.sql.shuffle.partitons", "spark.sql.shuffle.partitions"),
        ("spark.executor.instance", "spark.executor.instances"),
        ("spark.kubernetes.namspace", "spark.kubernetes.namespace"),
        (
            "spark.kubernetes.authenticate.driver.serviceAcountName",
            "spark.kubernetes.authenticate.driver.serviceAccountName",
        ),
    ],
)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_near_miss_names_the_key_it_looks_like(typo: str, meant: str, version: str) -> None:
    assert near_miss(typo, version) == meant
    (warning,) = typo_warnings([typo], version)
    line = ".".join(version.split(".")[:2])
    assert warning.startswith(f"{typo} is not a conf key of Spark {line}: did you mean {meant}?")


def test_the_suggestion_comes_from_the_line_in_use() -> None:
    newest = 1 << LINES.index("4.3")
    only_new = sorted(key for key, lines in KEYS.items() if lines == newest)
    assert only_new, "4.3 defines keys no older line has"
    typo = next(
        key[:-2] + key[-1] + key[-2]
        for key in only_new
        if len(key) < 40 and key[-1] != key[-2] and near_miss(key[:-2] + key[-1] + key[-2], "4.3.0")
    )
    assert near_miss(typo, "4.3.0") in only_new
    assert near_miss(typo, "3.5.9") not in only_new


@pytest.mark.parametrize("version", VERSIONS)
def test_no_key_spark_defines_on_any_line_warns(version: str) -> None:
    assert typo_warnings(KEYS, version) == []


@pytest.mark.parametrize(
    "key",
    [
        "spark.kubernetes.driver.label.contianer",  # a label the user names
        "spark.kubernetes.executor.annotation.memroy",
        "spark.kubernetes.driver.volumes.persistentVolumeClaim.data.mount.path",
        "spark.kubernetes.driverEnv.SPARK_EXECUTOR_MEMROY",
        "spark.executorEnv.PATHH",
        "spark.hadoop.fs.s3a.acess.key",  # Hadoop's keys are Hadoop's to check
        "spark.hive.metastore.urix",
        "spark.executor.resource.gpu.amount",
        "spark.shuffle.io.maxRetries",  # TransportConf joins the module's name at run time
        "spark.sql.catalog.my_catalog.uri",
        "spark.openlineage.parentJobNamespace",
        "spark.myapp.comment",  # an application's own key, close to nothing
        "spark.executor.memoryy.x.y.z.far.away",
        "not.spark.executor.memroy",  # spark-submit ignores non-spark keys with its own warning
    ],
)
def test_keys_under_open_families_or_far_from_any_never_warn(key: str) -> None:
    assert near_miss(key, "4.3.0") is None


def test_no_conf_key_of_the_parity_scenarios_warns() -> None:
    """122 scenarios captured from real spark-submit: every key they set is a real one, or
    one of an open family, or an application's own."""
    keys = {
        key
        for scenario in sorted(SCENARIOS.glob("*.yaml"))
        for key in (yaml.safe_load(scenario.read_text()).get("conf") or {})
    }
    assert len(keys) > 100
    assert {key: near_miss(key, "4.3.0") for key in keys if near_miss(key, "4.3.0")} == {}


def test_the_data_holds_what_the_script_reads_from_a_real_jar() -> None:
    """defined_conf_keys.py is testenv/spark_conf_keys.py's output: the keys it reads from
    Spark 4.3.0's Kubernetes jar (a small one, read in a second) are all 4.3 keys of the data."""
    from testenv.runtime_image import parity_root
    from testenv.spark_conf_keys import defined_keys

    jars = sorted(parity_root().glob("pyspark-4.3.0/lib/python*/site-packages/pyspark/jars/"
                                     "spark-kubernetes_*.jar"))  # fmt: skip
    if not jars:
        pytest.skip("pyspark 4.3.0 is not installed (tests/parity/install_spark.sh 4.3.0)")
    read = defined_keys(jars)
    assert "spark.kubernetes.container.image" in read
    assert "spark.kubernetes.authenticate.driver.serviceAccountName" in read  # joined
    newest = 1 << LINES.index("4.3")
    assert sorted(key for key in read if not KEYS.get(key, 0) & newest) == []
