import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import executor_decommission as decom
from airflow_provider_sparkk8s.submission.render import render
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import make_conf

ON = {decom.ENABLED_KEY: "true"}
SPARK_KEYS = [
    "spark.decommission.enabled",
    "spark.storage.decommission.enabled",
    "spark.storage.decommission.rddBlocks.enabled",
    "spark.storage.decommission.shuffleBlocks.enabled",
]


def test_off_by_default_and_when_false():
    for extra in ({}, {decom.ENABLED_KEY: "false"}):
        result = decom.step(make_conf(extra), SparkPod.initial())
        assert result.system_properties == {} and result.resources == ()
        assert not set(SPARK_KEYS) & set(render(make_conf(extra)).system_properties)


def test_one_switch_sets_sparks_four_keys_and_touches_no_pod():
    result = decom.step(make_conf(ON), SparkPod.initial())
    assert result.system_properties == dict.fromkeys(SPARK_KEYS, "true")
    assert result.pod == SparkPod.initial()
    assert (result.resources, result.pre_resources) == ((), ())


def test_a_value_the_user_set_is_kept():
    conf = make_conf(
        {
            **ON,
            "spark.storage.decommission.shuffleBlocks.enabled": "false",
            "spark.decommission.enabled": "true",
        }
    )
    properties = render(conf).system_properties
    assert properties["spark.storage.decommission.shuffleBlocks.enabled"] == "false"
    assert [properties[key] for key in SPARK_KEYS[:3]] == ["true", "true", "true"]
    conf_map = render(conf).resources[-1]["data"]["spark.properties"]
    assert "spark.storage.decommission.shuffleBlocks.enabled=false" in conf_map
    assert "spark.storage.decommission.rddBlocks.enabled=true" in conf_map


def test_a_bad_switch_names_the_key_and_the_value():
    with pytest.raises(SparkConfError) as caught:
        render(make_conf({decom.ENABLED_KEY: "on"}))
    assert (caught.value.key, caught.value.value) == (decom.ENABLED_KEY, "on")
