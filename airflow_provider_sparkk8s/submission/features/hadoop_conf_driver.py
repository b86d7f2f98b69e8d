"""HadoopConfDriverFeatureStep: ship Hadoop's configuration to the driver.

Either the submitter's `HADOOP_CONF_DIR` (an environment variable of the submitting process,
not a conf key) becomes a ConfigMap `<prefix>-hadoop-config` that Spark creates, or an
existing ConfigMap named by `spark.kubernetes.hadoop.configMapName` is mounted. Setting both
is an error in Spark too.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_subdomain
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    immutable_data_object,
)
from airflow_provider_sparkk8s.submission.local_files import (
    check_config_map_data,
    directory_files,
    file_text,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.HadoopConfDriverFeatureStep"
SINCE = (3, 0, 0)

ENV_HADOOP_CONF_DIR = "HADOOP_CONF_DIR"
CONFIG_MAP_KEY = "spark.kubernetes.hadoop.configMapName"
EXECUTOR_CONFIG_MAP_PROPERTY = "spark.kubernetes.executor.hadoopConfigMapName"
VOLUME_NAME = "hadoop-properties"
MOUNT_PATH = "/opt/hadoop/conf"


def config_map_name(conf: DriverConf) -> str:
    return f"{conf.resource_prefix}-hadoop-config"


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    conf_dir = conf.local.environment.get(ENV_HADOOP_CONF_DIR)
    existing = conf.get(CONFIG_MAP_KEY)
    if conf_dir is not None and existing is not None:
        raise SparkConfError(
            CONFIG_MAP_KEY,
            existing,
            f"either {CONFIG_MAP_KEY} or the {ENV_HADOOP_CONF_DIR} environment variable, not both",
            "Spark would create a second ConfigMap next to the one named",
        )
    if conf_dir is None and existing is None:
        return StepResult(pod=pod)

    resources: list[KubeObject] = []
    if existing is not None:
        if not is_dns1123_subdomain(existing):
            raise SparkConfError(CONFIG_MAP_KEY, existing, "the name of an existing ConfigMap")
        map_name = existing
        volume_source: KubeObject = {"name": existing}
    else:
        assert conf_dir is not None
        map_name = config_map_name(conf)
        files = directory_files(conf, ENV_HADOOP_CONF_DIR, conf_dir)
        data = {
            name: file_text(conf, ENV_HADOOP_CONF_DIR, f"{conf_dir}/{name}", content)
            for name, content in files
        }
        check_config_map_data(ENV_HADOOP_CONF_DIR, conf_dir, data)
        volume_source = {"name": map_name}
        if files:
            volume_source["items"] = [{"key": name, "path": name} for name, _ in files]
        resources.append(immutable_data_object("ConfigMap", map_name, data))

    new_pod = add_volumes_and_mounts(
        pod,
        volumes=[{"name": VOLUME_NAME, "configMap": volume_source}],
        mounts=[{"name": VOLUME_NAME, "mountPath": MOUNT_PATH}],
        env=[{"name": ENV_HADOOP_CONF_DIR, "value": MOUNT_PATH}],
    )
    return StepResult(
        pod=new_pod,
        system_properties={EXECUTOR_CONFIG_MAP_PROPERTY: map_name},
        resources=resources,
    )


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
