"""Spark's DriverServiceFeatureStep: the headless Service executors use to reach the driver."""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import APP_ID_LABEL
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission import naming
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.features import basic_driver
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.DriverServiceFeatureStep"
SINCE = (2, 3, 0)

IP_FAMILY_POLICIES = ("SingleStack", "PreferDualStack", "RequireDualStack")
IP_FAMILIES = ("IPv4", "IPv6", "IPv4,IPv6", "IPv6,IPv4")
SERVICE_LABEL_PREFIX = "spark.kubernetes.driver.service.label."
SERVICE_ANNOTATION_PREFIX = "spark.kubernetes.driver.service.annotation."


def check_no_driver_address(conf: DriverConf) -> None:
    for key in ("spark.driver.bindAddress", "spark.driver.host"):
        if conf.contains(key):
            raise SparkConfError(
                key, conf.get(key), "no value: Spark sets it for Kubernetes cluster mode"
            )


def service_block_manager_port(conf: DriverConf) -> int:
    # Unlike the container, the Service ignores spark.blockManager.port (as Spark does).
    return basic_driver.port(
        conf, "spark.driver.blockManager.port", basic_driver.DEFAULT_BLOCK_MANAGER_PORT
    )


def _choice(conf: DriverConf, key: str, default: str, allowed: tuple[str, ...]) -> str:
    value = conf.get(key, default)
    if value not in allowed:
        raise SparkConfError(key, value, " or ".join(allowed))
    return value


def service(conf: DriverConf) -> KubeObject:
    name = naming.driver_service_name(conf)
    annotations = cv.validate_annotations(
        SERVICE_ANNOTATION_PREFIX, conf.prefixed(SERVICE_ANNOTATION_PREFIX)
    )
    labels = cv.validate_labels(SERVICE_LABEL_PREFIX, conf.prefixed(SERVICE_LABEL_PREFIX))
    metadata: KubeObject = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    metadata["labels"] = {APP_ID_LABEL: conf.app_id, **labels}
    rpc_port = basic_driver.driver_port(conf)
    ports = [
        ("driver-rpc-port", rpc_port),
        ("blockmanager", service_block_manager_port(conf)),
        ("spark-ui", basic_driver.ui_port(conf)),
    ]
    if conf.version_tuple >= (4, 1, 0):
        ports.append(("spark-connect", basic_driver.connect_port(conf)))
    port_objects: list[KubeObject] = []
    for port_name, port in ports:
        entry: KubeObject = {"name": port_name, "port": port, "targetPort": port}
        if port_name == "spark-connect" and conf.version_tuple >= (4, 2, 0):
            entry["appProtocol"] = "grpc"
        port_objects.append(entry)
    spec: KubeObject = {"clusterIP": "None"}
    if conf.version_tuple >= (4, 3, 0):
        spec["publishNotReadyAddresses"] = cv.get_bool(
            conf, "spark.kubernetes.driver.service.publishNotReadyAddresses", False
        )
    spec["ipFamilyPolicy"] = _choice(
        conf, "spark.kubernetes.driver.service.ipFamilyPolicy", "SingleStack", IP_FAMILY_POLICIES
    )
    spec["ipFamilies"] = _choice(
        conf, "spark.kubernetes.driver.service.ipFamilies", "IPv4", IP_FAMILIES
    ).split(",")
    spec["selector"] = dict(conf.labels)
    spec["ports"] = port_objects
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    check_no_driver_address(conf)
    svc = service(conf)
    return StepResult(
        pod=pod,
        system_properties={
            "spark.driver.host": f"{svc['metadata']['name']}.{conf.namespace}.svc",
            "spark.driver.port": str(svc["spec"]["ports"][0]["port"]),
            "spark.driver.blockManager.port": str(svc["spec"]["ports"][1]["port"]),
        },
        resources=(svc,),
    )


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
