"""HadoopConfDriverFeatureStep: HADOOP_CONF_DIR shipped in a ConfigMap and mounted, or an
existing ConfigMap mounted, never both."""

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import hadoop_conf_driver
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import PREFIX, make_conf
from tests.support.hadoop_conf import CORE_SITE, HADOOP_DIR, hadoop_local


def test_hadoop_conf_dir_is_shipped_in_a_config_map_and_mounted():
    conf = make_conf(local=hadoop_local())
    result = hadoop_conf_driver.step(conf, SparkPod.initial())
    name = f"{PREFIX}-hadoop-config"
    assert result.pod.pod["spec"]["volumes"] == [
        {
            "name": "hadoop-properties",
            "configMap": {
                "name": name,
                "items": [
                    {"key": "core-site.xml", "path": "core-site.xml"},
                    {"key": "hdfs-site.xml", "path": "hdfs-site.xml"},
                ],
            },
        }
    ]
    assert result.pod.container == {
        "volumeMounts": [{"name": "hadoop-properties", "mountPath": "/opt/hadoop/conf"}],
        "env": [{"name": "HADOOP_CONF_DIR", "value": "/opt/hadoop/conf"}],
    }
    assert dict(result.system_properties) == {"spark.kubernetes.executor.hadoopConfigMapName": name}
    assert list(result.resources) == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "immutable": True,
            "data": {
                "core-site.xml": CORE_SITE.decode(),
                "hdfs-site.xml": "<configuration/>\u00e9",
            },
        }
    ]


def test_existing_hadoop_config_map_is_mounted_without_items_or_new_objects():
    conf = make_conf({"spark.kubernetes.hadoop.configMapName": "hadoop-site"})
    result = hadoop_conf_driver.step(conf, SparkPod.initial())
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "hadoop-properties", "configMap": {"name": "hadoop-site"}}
    ]
    assert dict(result.system_properties) == {
        "spark.kubernetes.executor.hadoopConfigMapName": "hadoop-site"
    }
    assert list(result.resources) == []


def test_hadoop_conf_dir_that_is_not_a_directory_ships_an_empty_config_map_like_spark():
    conf = make_conf(local=LocalInputs(environment={"HADOOP_CONF_DIR": "/nowhere"}))
    result = hadoop_conf_driver.step(conf, SparkPod.initial())
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "hadoop-properties", "configMap": {"name": f"{PREFIX}-hadoop-config"}}
    ]
    assert "data" not in result.resources[0]


def test_no_hadoop_conf_changes_nothing():
    result = hadoop_conf_driver.step(make_conf(), SparkPod.initial())
    assert result.pod == SparkPod.initial() and list(result.resources) == []


def test_hadoop_errors():
    both = make_conf({"spark.kubernetes.hadoop.configMapName": "m"}, local=hadoop_local())
    with pytest.raises(SparkConfError) as err:
        hadoop_conf_driver.step(both, SparkPod.initial())
    assert err.value.key == "spark.kubernetes.hadoop.configMapName"
    unreadable = LocalInputs(
        environment={"HADOOP_CONF_DIR": HADOOP_DIR}, directories={HADOOP_DIR: ("x.xml",)}
    )
    with pytest.raises(SparkConfError) as err:
        hadoop_conf_driver.step(make_conf(local=unreadable), SparkPod.initial())
    assert err.value.key == "HADOOP_CONF_DIR"
    bad_name = LocalInputs(
        environment={"HADOOP_CONF_DIR": HADOOP_DIR},
        files={f"{HADOOP_DIR}/a b.xml": b""},
        directories={HADOOP_DIR: ("a b.xml",)},
    )
    with pytest.raises(SparkConfError, match="cannot be a ConfigMap key"):
        hadoop_conf_driver.step(make_conf(local=bad_name), SparkPod.initial())
    with pytest.raises(SparkConfError):
        hadoop_conf_driver.step(
            make_conf({"spark.kubernetes.hadoop.configMapName": "Bad_Name"}), SparkPod.initial()
        )
