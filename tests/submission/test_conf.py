"""DriverConf as Spark's KubernetesDriverConf: plain data, and values derived from it once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from tests.support.driver_conf import APP_ID, PREFIX, make_conf


def test_prefixed_strips_the_prefix_of_matching_keys_only() -> None:
    conf = replace(
        make_conf(),
        spark_conf={
            "spark.kubernetes.driver.label.a": "1",
            "spark.kubernetes.driver.labelx": "2",
            "spark.kubernetes.driver.label.b/c": "3",
        },
    )
    assert conf.prefixed("spark.kubernetes.driver.label.") == {"a": "1", "b/c": "3"}


def test_derived_values_are_computed_once_and_read_only() -> None:
    conf = make_conf(
        {
            "spark.kubernetes.driver.label.team": "x-{{APP_ID}}",
            "spark.kubernetes.driver.volumes.emptyDir.scratch.mount.path": "/scratch",
        }
    )
    assert conf.resource_prefix == PREFIX and conf.resource_prefix is conf.resource_prefix
    assert conf.driver_pod_name == PREFIX + "-driver"
    assert conf.labels["team"] == f"x-{APP_ID}" and conf.labels["spark-role"] == "driver"
    assert conf.labels is conf.labels
    with pytest.raises(TypeError):
        conf.labels["team"] = "changed"  # type: ignore[index]
    assert [volume.volume_name for volume in conf.volumes] == ["scratch"]
    # A changed copy derives its own values.
    renamed = replace(conf, spark_conf={**conf.spark_conf, "spark.app.name": "other"})
    assert renamed.resource_prefix.startswith("other-")


def test_an_invalid_derived_value_fails_every_time_it_is_read() -> None:
    conf = make_conf({"spark.app.name": "a" * 250})
    for _ in range(2):
        with pytest.raises(SparkConfError) as caught:
            _ = conf.resource_prefix
        assert caught.value.key == "spark.app.name"
