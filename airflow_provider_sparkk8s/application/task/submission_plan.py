"""The operator's parameters as the Spark conf of one submission: pure.

spark-submit's own parsing (`submission/command_line/arguments.py`) turns the
SparkSubmitOperator-style parameters into conf; on top go the Kubernetes parameters, which win over
the same keys in `conf` because they are explicit, and the task-instance labels and driver pod name
that make a submission findable and race-free (see task_identity.py). The task-instance labels, and
the labels of the platform policy, go on the driver and on every executor.

One default of the operator's own (not spark-submit's, so the pipeline and its parity with
spark-submit stay untouched): on Spark 4.1+ the driver writes its exit exception into its
own `spark.exit-exception` annotation (`spark.kubernetes.driver.annotateExitException`,
off in Spark), which the failure then names. A value the user gives wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.application.task.task_identity import (
    TaskInstanceRef,
    driver_label_conf,
    driver_pod_name,
    executor_label_conf,
)
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf_values import version_tuple

POD_NAME_KEY = "spark.kubernetes.driver.pod.name"
NAMESPACE_KEY = "spark.kubernetes.namespace"
IMAGE_KEY = "spark.kubernetes.container.image"
DRIVER_TEMPLATE_KEY = "spark.kubernetes.driver.podTemplateFile"
EXECUTOR_TEMPLATE_KEY = "spark.kubernetes.executor.podTemplateFile"
ANNOTATE_EXIT_EXCEPTION_KEY = "spark.kubernetes.driver.annotateExitException"
ANNOTATE_EXIT_EXCEPTION_SINCE = (4, 1, 0)


@record
class KubernetesParameters:
    namespace: str
    image: str | None = None
    driver_pod_template: str | Mapping[str, Any] | None = None
    executor_pod_template: str | Mapping[str, Any] | None = None
    spark_version: str | None = None  # the line the objects follow (operator defaults)


def _is_document(value: str) -> bool:
    """A pod template file Airflow rendered (template_ext) holds its YAML or JSON text."""
    return "\n" in value.strip() or value.lstrip().startswith("{")


def _template_path(parameter: str, value: str | Mapping[str, Any] | None) -> str | None:
    if value is None or isinstance(value, Mapping):
        return None
    if isinstance(value, str) and value.strip():
        return None if _is_document(value) else value.strip()
    raise SparkConfError(parameter, value, "a pod template file path or a pod as a dict")


def _parse_document(parameter: str, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "its text"
        raise SparkConfError(
            parameter, f"<rendered template, {where}>", "a YAML or JSON Pod"
        ) from None


def template_dict(
    parameter: str, value: str | Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """A template given as a dict (or rendered YAML/JSON text) goes to the pipeline as data;
    a path goes through conf."""
    if isinstance(value, str) and _is_document(value):
        value = _parse_document(parameter, value)
        if not isinstance(value, Mapping):
            raise SparkConfError(parameter, type(value).__name__, "a YAML or JSON Pod")
    if isinstance(value, Mapping):
        if value.get("kind", "Pod") != "Pod":
            raise SparkConfError(parameter, value.get("kind"), "a Pod (kind: Pod)")
        return value
    _template_path(parameter, value)
    return None


def kubernetes_conf(params: KubernetesParameters) -> dict[str, str]:
    conf = {NAMESPACE_KEY: params.namespace}
    if params.image:
        conf[IMAGE_KEY] = params.image
    driver = _template_path("driver_pod_template", params.driver_pod_template)
    if driver:
        conf[DRIVER_TEMPLATE_KEY] = driver
    executor = _template_path("executor_pod_template", params.executor_pod_template)
    if executor:
        conf[EXECUTOR_TEMPLATE_KEY] = executor
    return conf


def submission_conf(
    parsed_conf: Mapping[str, str],
    kubernetes: KubernetesParameters,
    ref: TaskInstanceRef,
    submission: int,
    platform_labels: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole Spark conf: parsed parameters, then Kubernetes ones, then the identity
    (with the platform's labels, which win over the author's) on driver and executors.

    A driver pod name the user set is kept (then that name is the race guard, and a retry
    after a kept, finished pod cannot reuse it); otherwise the name is per submission.
    """
    conf = {**parsed_conf, **kubernetes_conf(kubernetes)}
    if IMAGE_KEY not in conf and "spark.kubernetes.driver.container.image" not in conf:
        raise SparkConfError(
            "image",
            None,
            "the Spark container image (image=... or conf[spark.kubernetes.container.image])",
        )
    for key, value in (platform_labels or {}).items():
        conf[f"spark.kubernetes.driver.label.{key}"] = value
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    version = kubernetes.spark_version
    if (
        version
        and version_tuple(version) >= ANNOTATE_EXIT_EXCEPTION_SINCE
        and ANNOTATE_EXIT_EXCEPTION_KEY not in conf
    ):
        conf[ANNOTATE_EXIT_EXCEPTION_KEY] = "true"
    conf.update(driver_label_conf(ref, submission))
    conf.update(executor_label_conf(ref, submission))
    if POD_NAME_KEY not in parsed_conf:
        conf[POD_NAME_KEY] = driver_pod_name(conf.get("spark.app.name", "spark"), ref, submission)
    return conf


def operator_keys(conf: Mapping[str, str], parsed_conf: Mapping[str, str]) -> dict[str, str]:
    """The keys `submission_conf` added that the author did not write (namespace, identity,
    platform labels, the pod name): a platform policy's denied keys are about the author's
    input, which includes a key the operator then overwrote, and the image and pod template
    parameters."""
    authored = (IMAGE_KEY, DRIVER_TEMPLATE_KEY, EXECUTOR_TEMPLATE_KEY)
    return {
        key: value for key, value in conf.items() if key not in authored and key not in parsed_conf
    }


def namespace_of(explicit: str | None, conf: Mapping[str, Any]) -> str | None:
    """The namespace the task names itself (parameter, else conf); None: ask the connection."""
    value = explicit or conf.get(NAMESPACE_KEY)
    return str(value) if value else None
