"""Spark's KubernetesDriverBuilder and the final assembly of `Client.run`, as pure functions.

`build_driver_spec` folds the feature steps (`BUILTIN_STEPS`, in Spark's order and gated by
the Spark line, then ours, `PROVIDER_STEPS`, then user steps) over the initial pod.
`assemble` adds what Spark adds after the steps: the conf ConfigMap, its volume and mount,
and the Spark container appended last.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission import pod_template, properties, secret_confs
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.features import (
    auth_secret,
    basic_driver,
    driver_command,
    driver_disruption_budget,
    driver_kubernetes_credentials,
    driver_service,
    env_secrets,
    executor_decommission,
    executor_network_policy,
    hadoop_conf_driver,
    kerberos_conf_driver,
    local_dirs,
    mount_secrets,
    mount_volumes,
    network_policy,
    pod_security,
    pod_template_config_map,
)
from airflow_provider_sparkk8s.submission.podops import add_to_list, editable, env_var, volume_mount
from airflow_provider_sparkk8s.submission.spec import (
    DriverSpec,
    FeatureStep,
    KubeObject,
    SparkPod,
    StepFunction,
    StepResult,
)

# Spark 4.3.0's KubernetesDriverBuilder, in its order; each line is a module in features/
# ending in `STEP = FeatureStep(SPARK_CLASS, SINCE, step)`. A new step: a file and a line.
BUILTIN_STEPS: tuple[FeatureStep, ...] = (
    basic_driver.STEP,
    driver_kubernetes_credentials.STEP,
    driver_service.STEP,
    network_policy.STEP,
    mount_secrets.STEP,
    env_secrets.STEP,
    mount_volumes.STEP,
    driver_command.STEP,
    hadoop_conf_driver.STEP,
    kerberos_conf_driver.STEP,
    pod_template_config_map.STEP,
    local_dirs.STEP,
)


def _volcano() -> FeatureStep:
    from airflow_provider_sparkk8s.submission.features import volcano

    return volcano.STEP


# Spark's optional steps, by class name: run (and imported) only when
# spark.kubernetes.driver.pod.featureSteps names their class.
OPTIONAL_STEPS: dict[str, Callable[[], FeatureStep]] = {
    "org.apache.spark.deploy.k8s.features.VolcanoFeatureStep": _volcano,
}
# Ours (Spark has none of them), after Spark's and before user steps; each does nothing
# unless its own spark.kubernetes.sparkk8s.* key is set, so spark-submit's objects stay.
# The last three are the secure preset's (application/policy/secure_preset.py); pod security runs
# last of ours, so it fills every container and volume the others added.
PROVIDER_STEPS: tuple[FeatureStep, ...] = (
    driver_disruption_budget.STEP,
    executor_decommission.STEP,
    auth_secret.STEP,
    executor_network_policy.STEP,
    pod_security.STEP,
)

USER_STEPS_KEY = "spark.kubernetes.driver.pod.featureSteps"
EXCLUDED_STEPS_KEY = "spark.kubernetes.driver.pod.excludedFeatureSteps"
EXCLUSION_SINCE = (4, 1, 0)
_USER_STEP_ACCEPTED = (
    "a comma list of importable Python callables, 'package.module:function' or "
    "'package.module.function', taking (conf, pod) and returning a StepResult"
)


def builtin_steps(conf: DriverConf) -> list[FeatureStep]:
    """The built-in steps this Spark line runs, in order, then ours (each a no-op unless
    switched on, as Spark's steps are unless configured)."""
    spark = [step for step in BUILTIN_STEPS if conf.version_tuple >= step.since]
    return spark + list(PROVIDER_STEPS)


def user_step(path: str) -> FeatureStep:
    """Spark's own optional step by class name, else the callable at `package.module:function`
    or `package.module.function`."""
    optional = OPTIONAL_STEPS.get(path)
    if optional is not None:
        return optional()
    return FeatureStep(path, (0, 0, 0), _import_callable(path))


def _import_callable(path: str) -> StepFunction:
    module_name, sep, attribute = path.partition(":")
    if not sep:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise SparkConfError(USER_STEPS_KEY, path, _USER_STEP_ACCEPTED)
    try:
        target = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as err:
        raise SparkConfError(
            USER_STEPS_KEY, path, _USER_STEP_ACCEPTED, f"cannot import it: {err}"
        ) from None
    if not callable(target):
        raise SparkConfError(USER_STEPS_KEY, path, _USER_STEP_ACCEPTED, "it is not callable")
    return target  # a user's callable: _apply checks what it returns


def user_steps(conf: DriverConf) -> list[FeatureStep]:
    return [user_step(path) for path in cv.get_list(conf, USER_STEPS_KEY)]


def active_steps(conf: DriverConf) -> list[FeatureStep]:
    """Built-in then user steps, minus the excluded ones (exclusion exists since 4.1)."""
    steps = builtin_steps(conf) + user_steps(conf)
    if conf.version_tuple < EXCLUSION_SINCE:
        return steps
    excluded = set(cv.get_list(conf, EXCLUDED_STEPS_KEY))
    return [step for step in steps if step.name not in excluded]


def initial_pod(conf: DriverConf) -> SparkPod:
    """The driver template (if any) split into pod and Spark container, else an empty pod."""
    return pod_template.initial_driver_pod(conf)


def _apply(step: FeatureStep, conf: DriverConf, pod: SparkPod) -> StepResult:
    result = step.run(conf, pod)
    if not isinstance(result, StepResult):
        raise SparkConfError(
            USER_STEPS_KEY, step.name, _USER_STEP_ACCEPTED, f"it returned {type(result).__name__}"
        )
    return result


def build_driver_spec(conf: DriverConf, steps: list[FeatureStep] | None = None) -> DriverSpec:
    """The fold: start from the initial pod and every conf entry as a system property."""
    spec = DriverSpec(
        pod=initial_pod(conf),
        pre_resources=(),
        resources=(),
        system_properties=dict(conf.spark_conf),
    )
    for step in active_steps(conf) if steps is None else steps:
        result = _apply(step, conf, spec.pod)
        spec = DriverSpec(
            pod=result.pod,
            pre_resources=spec.pre_resources + tuple(result.pre_resources),
            resources=spec.resources + tuple(result.resources),
            system_properties={**spec.system_properties, **result.system_properties},
        )
    return spec


@record
class AssembledDriver:
    """What `Client.run` sends: the driver pod, pre-resources, post-resources, conf map."""

    pod: KubeObject
    pre_resources: tuple[KubeObject, ...]
    resources: tuple[KubeObject, ...]  # step resources, in step order
    conf_config_map: KubeObject
    # The conf with its real values (the uploader's storage options); the ConfigMap may
    # hold references instead (secret_confs).
    system_properties: dict[str, str]
    secret_confs_in_clear: tuple[str, ...] = ()  # secret-looking keys the ConfigMap holds


def assemble(conf: DriverConf, spec: DriverSpec) -> AssembledDriver:
    """Spark's final assembly: conf ConfigMap, SPARK_CONF_DIR, container last, conf volume.
    With secretConfs.enabled (ours, off by default) the ConfigMap holds references where
    secret confs were, and their Secret comes first among the pre-resources."""
    moved = secret_confs.plan_secret_confs(conf, spec.system_properties)
    config_map = properties.conf_config_map(conf, moved.properties)
    pod, container = editable(spec.pod)
    container = secret_confs.with_env_from_secret(container, moved.driver_env)
    add_to_list(container, ("env",), [env_var("SPARK_CONF_DIR", properties.CONF_DIR_IN_POD)])
    add_to_list(
        container,
        ("volumeMounts",),
        [volume_mount(properties.CONF_VOLUME, properties.CONF_DIR_IN_POD)],
    )
    add_to_list(pod, ("spec", "containers"), [container])
    add_to_list(pod, ("spec", "volumes"), [properties.conf_volume(config_map)])
    full_pod = {"apiVersion": "v1", "kind": "Pod", **pod}
    return AssembledDriver(
        pod=full_pod,
        pre_resources=(*([moved.secret] if moved.secret else []), *spec.pre_resources),
        resources=spec.resources,
        conf_config_map=config_map,
        system_properties=dict(spec.system_properties),
        secret_confs_in_clear=moved.in_clear,
    )
