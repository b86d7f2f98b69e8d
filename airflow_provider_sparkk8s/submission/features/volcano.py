"""Spark's VolcanoFeatureStep: gang-schedule the application with Volcano.

An optional step, run when `spark.kubernetes.driver.pod.featureSteps` names Spark's class
(with `spark.kubernetes.scheduler.name=volcano`). The driver pod is annotated with
`scheduling.k8s.io/group-name: <appId>-podgroup`, and a PodGroup of that name is a
pre-resource: applied before the driver pod, then again owned by it. The PodGroup comes from
`spark.kubernetes.scheduler.volcano.podGroupTemplateFile` (YAML or JSON; the shell read it),
else `...podGroupTemplateJson`, else is empty; its name and namespace are always Spark's.
The objects match spark-submit 4.3.0's (tests/parity/golden/volcano-*).
"""

from __future__ import annotations

import json
from typing import Any

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.local_files import file_bytes, file_text
from airflow_provider_sparkk8s.submission.podops import editable, merge_into
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.VolcanoFeatureStep"
# In Spark's source since 3.3; the pyspark distributions ship it from 4.2 on. A Spark built
# with Volcano runs it on any line, so we do too.
SINCE = (3, 3, 0)

API_VERSION = "scheduling.volcano.sh/v1beta1"
KIND = "PodGroup"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TEMPLATE_FILE_KEY = "spark.kubernetes.scheduler.volcano.podGroupTemplateFile"
TEMPLATE_JSON_KEY = "spark.kubernetes.scheduler.volcano.podGroupTemplateJson"
_ACCEPTED = f"a {KIND} ({API_VERSION}) as YAML or JSON"


def pod_group_name(conf: DriverConf) -> str:
    return f"{conf.app_id}-podgroup"


def _parse(key: str, source: str, text: str) -> dict[str, Any]:
    try:
        if key == TEMPLATE_JSON_KEY:
            loaded = json.loads(text)
        else:
            import yaml  # only a template needs YAML

            loaded = yaml.safe_load(text)
    except Exception as error:  # noqa: BLE001 - json and yaml raise their own error types
        raise SparkConfError(key, source, _ACCEPTED, f"it does not parse: {error}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise SparkConfError(key, source, _ACCEPTED, "it is not a mapping")
    if loaded.get("kind", KIND) != KIND:
        raise SparkConfError(key, source, _ACCEPTED, f"its kind is {loaded.get('kind')!r}")
    return loaded


def _template(conf: DriverConf) -> dict[str, Any]:
    path = conf.get(TEMPLATE_FILE_KEY)
    if path is not None:
        content = file_bytes(conf, TEMPLATE_FILE_KEY, path)
        return _parse(TEMPLATE_FILE_KEY, path, file_text(conf, TEMPLATE_FILE_KEY, path, content))
    inline = conf.get(TEMPLATE_JSON_KEY)
    if inline is not None:
        return _parse(TEMPLATE_JSON_KEY, inline, inline)
    return {}


def _quantities(resources: Any) -> Any:
    # fabric8 reads minResources as Quantities and writes them back as strings.
    if not isinstance(resources, dict):
        return resources
    return {name: str(value) for name, value in resources.items()}


def pod_group(conf: DriverConf) -> KubeObject:
    """The PodGroup spark-submit applies before the driver pod."""
    template = _template(conf)
    metadata = dict(template.get("metadata") or {})
    metadata["name"] = pod_group_name(conf)
    metadata["namespace"] = conf.namespace
    spec = dict(template.get("spec") or {})
    if "minResources" in spec:
        spec["minResources"] = _quantities(spec["minResources"])
    extra = {
        k: v for k, v in template.items() if k not in ("apiVersion", "kind", "metadata", "spec")
    }
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec, **extra}


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    new_pod, container = editable(pod)
    merge_into(new_pod, ("metadata", "annotations"), {GROUP_ANNOTATION: pod_group_name(conf)})
    return StepResult(pod=SparkPod(new_pod, container), pre_resources=[pod_group(conf)])


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
