"""PodTemplateConfigMapStep: ship the executor pod template to the driver.

Active when `spark.kubernetes.executor.podTemplateFile` is set (or an executor template dict
is given), and with our `spark.kubernetes.sparkk8s.podSecurity=restricted`, which ships a
template holding the profile's security context when the author gave none. The template
text goes into a ConfigMap `<prefix>-driver-podspec-conf-map`, which is mounted at
`/opt/spark/pod-template`; the driver reads it from there, so the conf entry is rewritten
to that path.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    immutable_data_object,
)
from airflow_provider_sparkk8s.submission.local_files import check_config_map_data
from airflow_provider_sparkk8s.submission.pod_template import (
    DICT_SOURCE,
    EXECUTOR_TEMPLATE_KEY,
    executor_template_text,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.PodTemplateConfigMapStep"
SINCE = (3, 0, 0)

CONFIG_MAP_SUFFIX = "driver-podspec-conf-map"
DATA_KEY = "podspec-configmap-key"
VOLUME_NAME = "pod-template-volume"
MOUNT_PATH = "/opt/spark/pod-template"
FILE_NAME = "pod-spec-template.yml"


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    text = executor_template_text(conf)
    if text is None:
        return StepResult(pod=pod)
    source = conf.get(EXECUTOR_TEMPLATE_KEY, DICT_SOURCE) or DICT_SOURCE
    check_config_map_data(EXECUTOR_TEMPLATE_KEY, source, {DATA_KEY: text})
    map_name = f"{conf.resource_prefix}-{CONFIG_MAP_SUFFIX}"
    volume = {
        "name": VOLUME_NAME,
        "configMap": {"name": map_name, "items": [{"key": DATA_KEY, "path": FILE_NAME}]},
    }
    config_map = immutable_data_object("ConfigMap", map_name, {DATA_KEY: text})
    return StepResult(
        pod=add_volumes_and_mounts(pod, [volume], [{"name": VOLUME_NAME, "mountPath": MOUNT_PATH}]),
        system_properties={EXECUTOR_TEMPLATE_KEY: f"{MOUNT_PATH}/{FILE_NAME}"},
        resources=[config_map],
    )


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
