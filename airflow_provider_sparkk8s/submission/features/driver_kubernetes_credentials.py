"""Spark's DriverKubernetesCredentialsFeatureStep: ship the driver's API credentials in a Secret
(or set the service account), and redact every `...oauthToken` in spark.properties."""

from __future__ import annotations

from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.local_files import file_bytes
from airflow_provider_sparkk8s.submission.podops import add_to_list, child, editable, volume_mount
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.DriverKubernetesCredentialsFeatureStep"
SINCE = (2, 3, 0)

PREFIX = "spark.kubernetes.authenticate.driver"
MOUNTED_PREFIX = "spark.kubernetes.authenticate.driver.mounted"
VOLUME_NAME = "kubernetes-credentials"
MOUNT_PATH = "/mnt/secrets/spark-kubernetes-credentials"
REDACTED = "<present_but_redacted>"
# (conf suffix of the submitted file, Secret key), in Spark's order.
FILE_CREDENTIALS = (
    ("clientKeyFile", "client-key"),
    ("clientCertFile", "client-cert"),
    ("caCertFile", "ca-cert"),
)


def secret_name(conf: DriverConf) -> str:
    return conf.resource_prefix + "-kubernetes-credentials"


def secret_data(conf: DriverConf) -> dict[str, str]:
    """Secret key -> base64 value, in Spark's order (client-key, client-cert, ca-cert, token)."""
    raw: dict[str, bytes] = {}
    for suffix, secret_key in FILE_CREDENTIALS:
        path = conf.get(f"{PREFIX}.{suffix}")
        if path is not None:
            raw[secret_key] = file_bytes(conf, f"{PREFIX}.{suffix}", path)
    token = conf.get(f"{PREFIX}.oauthToken")
    if token is not None:
        raw["oauth-token"] = token.encode("utf-8")
    if not raw:
        return {}
    import base64  # here: most submissions ship no credentials (start-up time)

    return {key: base64.b64encode(content).decode("ascii") for key, content in raw.items()}


MOUNTED_LOCATIONS = (
    ("caCertFile", "ca-cert"),
    ("clientKeyFile", "client-key"),
    ("clientCertFile", "client-cert"),
    ("oauthTokenFile", "oauth-token"),
)


def system_properties(conf: DriverConf, shipped: dict[str, str]) -> dict[str, str]:
    """Redacted tokens, and where the driver finds each credential inside its pod."""
    props = {key: REDACTED for key in conf.spark_conf if key.endswith("oauthToken")}
    for mounted_suffix, secret_key in MOUNTED_LOCATIONS:
        mounted_key = f"{MOUNTED_PREFIX}.{mounted_suffix}"
        mounted = conf.get(mounted_key)
        if mounted is not None:
            props[mounted_key] = mounted
        elif secret_key in shipped:
            props[mounted_key] = f"{MOUNT_PATH}/{secret_key}"
    return props


def credentials_secret(conf: DriverConf, data: dict[str, str]) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(conf)},
        "data": data,
        "immutable": True,
    }


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    data = secret_data(conf)
    props = system_properties(conf, data)
    new_pod, container = editable(pod)
    if not data:
        account = conf.get(f"{PREFIX}.serviceAccountName")
        if account is not None:
            spec = child(new_pod, "spec")
            spec["serviceAccount"] = account
            spec["serviceAccountName"] = account
        return StepResult(pod=SparkPod(new_pod, container), system_properties=props)
    # Shipped credentials win over a configured service account (Spark ignores the latter).
    add_to_list(
        new_pod,
        ("spec", "volumes"),
        [{"name": VOLUME_NAME, "secret": {"secretName": secret_name(conf)}}],
    )
    add_to_list(container, ("volumeMounts",), [volume_mount(VOLUME_NAME, MOUNT_PATH)])
    return StepResult(
        pod=SparkPod(new_pod, container),
        system_properties=props,
        resources=(credentials_secret(conf, data),),
    )


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
