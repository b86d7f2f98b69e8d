"""spark_order against orders printed by Spark 4.3.0 and 3.5.9's own classes.

tests/submission/data/spark_conf_orders.json was produced by a small Scala program run on
the pyspark jars: it filled a SparkConf with the first N of `conf_entries`, cloned it (as
spark-submit does) and printed `getAll`, `getAllWithPrefix(prefix).toMap` keys and the
volume names of `KubernetesVolumeUtils.parseVolumesWithPrefix`.
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.submission import spark_order
from tests.support.driver_conf import make_conf

DATA = json.loads((Path(__file__).parent / "data" / "spark_conf_orders.json").read_text())
ENTRIES = [tuple(pair) for pair in DATA["conf_entries"]]
VERSIONS = {"4.3.0": (4, 3, 0), "3.5.9": (3, 5, 9)}
PREFIXES = {
    "vol.props": "spark.kubernetes.driver.volumes.",
    "secrets": "spark.kubernetes.driver.secrets.",
    "env": "spark.kubernetes.driverEnv.",
}
CASES = [(line, int(n)) for line in DATA["lines"] for n in DATA["lines"][line]]


@pytest.mark.parametrize(("line", "n"), CASES)
def test_get_all_and_prefixed_maps_iterate_like_spark(line, n):
    conf = dict(ENTRIES[:n])
    expected = DATA["lines"][line][str(n)]
    version = VERSIONS[line]
    assert list(spark_order.get_all_order(conf, version >= (4, 0, 0))) == expected["getAll"]
    driver_conf = replace(make_conf(version=line), spark_conf=conf)
    for name, prefix in PREFIXES.items():
        assert list(driver_conf.prefixed(prefix)) == expected[name], name


@pytest.mark.parametrize(("line", "n"), [case for case in CASES if case[1] >= 5])
def test_volumes_come_in_spark_s_order(line, n):
    conf = replace(make_conf(version=line), spark_conf=dict(ENTRIES[:n]))
    names = [spec.volume_name for spec in conf.volumes]
    assert names == DATA["lines"][line][str(n)]["vols"]


def test_more_than_four_entries_follow_the_hash_trie_of_the_spark_line():
    keys = ["ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX"]
    # Spark 4.3.0's driver env order for these (a parity golden).
    assert spark_order.scala_map_order(keys, scala_213=True) == [
        "FIVE",
        "TWO",
        "ONE",
        "THREE",
        "SIX",
        "FOUR",
    ]
    assert spark_order.scala_map_order(keys[:4], scala_213=True) == keys[:4]


def test_java_string_hash():
    assert spark_order.java_string_hash("hello") == 99162322
    assert spark_order.java_string_hash("é𝄞") == 1996307
    assert spark_order.java_string_hash("") == 0
