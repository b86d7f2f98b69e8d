"""Spark's BasicDriverFeatureStep: image, resources, ports, env, labels, annotations, node
selectors, scheduler and the driver's identity system properties."""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import DRIVER_CONTAINER
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.podops import (
    add_to_list,
    child,
    editable,
    env_var,
    merge_into,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult
from airflow_provider_sparkk8s.submission.upload_plan import plan_uploads

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.BasicDriverFeatureStep"
SINCE = (2, 3, 0)

DEFAULT_DRIVER_PORT = 7078
DEFAULT_BLOCK_MANAGER_PORT = 7079
DEFAULT_UI_PORT = 4040
DEFAULT_CONNECT_PORT = 15002
LEGACY_MIN_OVERHEAD_MIB = 384
PULL_POLICIES = ("Always", "Never", "IfNotPresent")
DRIVER_ENV_PREFIX = "spark.kubernetes.driverEnv."


def driver_image(conf: DriverConf) -> str:
    image = conf.get("spark.kubernetes.driver.container.image") or conf.get(
        "spark.kubernetes.container.image"
    )
    if image is None:
        raise SparkConfError(
            "spark.kubernetes.container.image",
            None,
            "a container image (or spark.kubernetes.driver.container.image)",
            "Must specify the driver container image",
        )
    if conf.version_tuple >= (4, 1, 0):
        image = image.replace("{{SPARK_VERSION}}", conf.spark_version)
    if not image.strip():
        raise SparkConfError("spark.kubernetes.container.image", image, "a non-empty image")
    return image


def pull_policy(conf: DriverConf) -> str:
    key = "spark.kubernetes.container.image.pullPolicy"
    policy = conf.get(key, "IfNotPresent")
    if policy not in PULL_POLICIES:
        raise SparkConfError(key, policy, " or ".join(PULL_POLICIES))
    return policy


def port(conf: DriverConf, key: str, default: int, *, trim: bool = False) -> int:
    # Spark reads most ports raw (`getInt`, no trim); spark.ui.port is a typed (trimmed) conf.
    value = cv.get_int(conf, key, default, trim=trim)
    if not 1 <= value <= 65535:
        raise SparkConfError(key, str(value), "a port between 1 and 65535")
    return value


def driver_port(conf: DriverConf) -> int:
    return port(conf, "spark.driver.port", DEFAULT_DRIVER_PORT)


def container_block_manager_port(conf: DriverConf) -> int:
    # The container honours spark.blockManager.port as a fallback; the Service does not.
    if conf.contains("spark.driver.blockManager.port"):
        return port(conf, "spark.driver.blockManager.port", DEFAULT_BLOCK_MANAGER_PORT)
    return port(conf, "spark.blockManager.port", DEFAULT_BLOCK_MANAGER_PORT)


def ui_port(conf: DriverConf) -> int:
    return port(conf, "spark.ui.port", DEFAULT_UI_PORT, trim=True)


def connect_port(conf: DriverConf) -> int:
    return port(conf, "spark.connect.grpc.binding.port", DEFAULT_CONNECT_PORT)


def default_overhead_factor(conf: DriverConf) -> float:
    key = "spark.kubernetes.memoryOverheadFactor"
    factor = cv.get_double(conf, key, 0.1)
    if conf.main_app_resource.kind != "java" and not conf.contains(key):
        factor = 0.4
    assert factor is not None
    if not factor >= 0 or factor == float("inf"):
        raise SparkConfError(key, conf.get(key), "a finite number >= 0")
    return factor


def driver_memory_mib(conf: DriverConf) -> int:
    """spark.driver.memory plus overhead, in MiB (Spark's formula, per version)."""
    memory = cv.get_size_mib(conf, "spark.driver.memory", "1g")
    assert memory is not None
    factor_key = "spark.driver.memoryOverheadFactor"
    factor = cv.get_double(conf, factor_key, default_overhead_factor(conf))
    assert factor is not None
    if conf.contains(factor_key) and not (0 < factor < float("inf")):
        raise SparkConfError(factor_key, conf.get(factor_key), "a finite number > 0")
    overhead = cv.get_size_mib(conf, "spark.driver.memoryOverhead")
    if overhead is None:
        if conf.version_tuple >= (4, 0, 0):
            minimum = cv.get_size_mib(conf, "spark.driver.minMemoryOverhead", "384m")
        else:
            minimum = LEGACY_MIN_OVERHEAD_MIB
        assert minimum is not None
        overhead = max(_java_int_cast(factor * memory), minimum)
    total = memory + overhead
    if total > (1 << 31) - 1:
        raise SparkConfError(
            "spark.driver.memory", conf.get("spark.driver.memory"), "a smaller size"
        )
    return total


def _java_int_cast(value: float) -> int:
    # Java's (int) on a double truncates toward zero and saturates at the int range.
    return max(-(1 << 31), min((1 << 31) - 1, int(value)))


def cpu_request(conf: DriverConf) -> str:
    cores = cv.get_int(conf, "spark.driver.cores", 1)
    if cores < 1:
        raise SparkConfError(
            "spark.driver.cores", conf.get("spark.driver.cores"), "a whole number >= 1"
        )
    request = cv.get_cores_quantity(conf, "spark.kubernetes.driver.request.cores", str(cores))
    assert request is not None
    return request


def custom_resource_limits(conf: DriverConf) -> dict[str, str]:
    """`<vendor>/<name>: amount` for every `spark.driver.resource.<name>.amount`."""
    return cv.resource_quantities(conf.spark_conf, "spark.driver.resource.")


def node_selector(conf: DriverConf) -> dict[str, str]:
    common = conf.prefixed("spark.kubernetes.node.selector.")
    driver = conf.prefixed("spark.kubernetes.driver.node.selector.")
    cv.validate_labels("spark.kubernetes.node.selector.", common)
    cv.validate_labels("spark.kubernetes.driver.node.selector.", driver)
    return {**common, **driver}


def spark_user(conf: DriverConf) -> str:
    """The driver's SPARK_USER. 4.3 names the proxy user outright. Before, spark-submit
    builds the pod inside the proxy user's doAs, so Utils.getCurrentUserName gives the
    submitter's SPARK_USER when set, else the proxy user (the current UGI)."""
    if conf.proxy_user is not None and (
        conf.version_tuple >= (4, 3, 0) or "SPARK_USER" not in conf.local.environment
    ):
        return conf.proxy_user
    return conf.local.spark_user


def _container(conf: DriverConf, container: KubeObject) -> KubeObject:
    memory = f"{driver_memory_mib(conf)}Mi"
    request = cpu_request(conf)
    limit = cv.get_cores_quantity(conf, "spark.kubernetes.driver.limit.cores")
    resource_limits = custom_resource_limits(conf)
    ports = [
        ("driver-rpc-port", driver_port(conf)),
        ("blockmanager", container_block_manager_port(conf)),
        ("spark-ui", ui_port(conf)),
    ]
    if conf.version_tuple >= (4, 1, 0):
        ports.append(("spark-connect", connect_port(conf)))
    user_env = conf.prefixed(DRIVER_ENV_PREFIX)

    container["name"] = container.get("name") or DRIVER_CONTAINER
    container["image"] = driver_image(conf)
    container["imagePullPolicy"] = pull_policy(conf)
    add_to_list(
        container,
        ("ports",),
        ({"name": name, "containerPort": number, "protocol": "TCP"} for name, number in ports),
    )
    add_to_list(
        container,
        ("env",),
        [
            env_var("SPARK_USER", spark_user(conf)),
            env_var("SPARK_APPLICATION_ID", conf.app_id),
            *(env_var(name, value) for name, value in user_env.items() if value is not None),
            {
                "name": "SPARK_DRIVER_BIND_ADDRESS",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
            },
        ],
    )
    merge_into(container, ("resources", "requests"), {"cpu": request})
    merge_into(container, ("resources", "limits"), {"cpu": limit} if limit is not None else {})
    merge_into(container, ("resources", "requests"), {"memory": memory})
    merge_into(container, ("resources", "limits"), {"memory": memory, **resource_limits})
    if conf.version_tuple >= (4, 3, 0):
        child(container, "securityContext")["allowPrivilegeEscalation"] = cv.get_bool(
            conf,
            "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation",
            cv.get_bool(conf, "spark.kubernetes.securityContext.allowPrivilegeEscalation", False),
        )
    return container


def _pod(conf: DriverConf, pod: KubeObject) -> KubeObject:
    child(pod, "metadata")["name"] = conf.driver_pod_name
    merge_into(pod, ("metadata", "labels"), conf.labels)
    merge_into(pod, ("metadata", "annotations"), conf.annotations)
    child(pod, "spec")["restartPolicy"] = "Never"
    merge_into(pod, ("spec", "nodeSelector"), node_selector(conf))
    secrets = cv.get_list(conf, "spark.kubernetes.container.image.pullSecrets")
    add_to_list(pod, ("spec", "imagePullSecrets"), ({"name": name} for name in secrets))
    scheduler = conf.get("spark.kubernetes.driver.scheduler.name") or conf.get(
        "spark.kubernetes.scheduler.name"
    )
    if scheduler:
        child(pod, "spec")["schedulerName"] = scheduler
    return pod


def system_properties(conf: DriverConf) -> dict[str, str]:
    # Local dependencies point at their uploaded copies (the shell uploads the same plan).
    uploaded = plan_uploads(conf).properties
    return {
        "spark.kubernetes.driver.pod.name": conf.driver_pod_name,
        "spark.app.id": conf.app_id,
        "spark.kubernetes.submitInDriver": "true",
        "spark.kubernetes.memoryOverheadFactor": cv.java_double_to_string(
            default_overhead_factor(conf)
        ),
        **uploaded,
    }


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    new_pod, container = editable(pod)
    return StepResult(
        pod=SparkPod(pod=_pod(conf, new_pod), container=_container(conf, container)),
        system_properties=system_properties(conf),
    )


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
