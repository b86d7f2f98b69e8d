"""Generated confs for the platform policy's tests: one policy, confs it allows, and
mutations that each break one rule (with the key the refusal must name)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

from airflow_provider_sparkk8s.application.policy.platform_policy import Policy, parse_policy

SECRET = "tok-9f3e2a71c4"
POLICY_DOCUMENT = {
    "denied_keys": ["spark.kubernetes.authenticate.submission.*", "spark.driver.extraJavaOptions"],
    "pinned": {"spark.eventLog.enabled": "false"},
    "allowed_namespaces": ["team-*"],
    "allowed_service_accounts": ["spark", "spark-*"],
    "allowed_image_registries": ["registry.example.com/spark", "docker.io/apache"],
    "max_cores": 12,
    "max_memory": "24g",
    "max_executors": 6,
    "max_gpus": 2,
    "required_labels": ["team"],
}


def policy(source: str = "test policy") -> Policy:
    return parse_policy(POLICY_DOCUMENT, source)


@st.composite
def allowed_confs(draw: st.DrawFn, namespaces: tuple[str, ...] = ("team-a", "team-b")) -> dict:
    """A conf inside every rule of POLICY_DOCUMENT (at most 1 + 4 x 2 cores, 4 executors)."""
    team = draw(st.sampled_from(["etl", "ml", "bi"]))
    conf = {
        "spark.kubernetes.namespace": draw(st.sampled_from(namespaces)),
        "spark.kubernetes.authenticate.driver.serviceAccountName": draw(
            st.sampled_from(["spark", "spark-etl"])
        ),
        "spark.kubernetes.container.image": draw(
            st.sampled_from(
                [
                    "registry.example.com/spark/spark:4.0.1",
                    "apache/spark:4.0.1",
                    "docker.io/apache/spark:4.0.1",
                ]
            )
        ),
        "spark.executor.instances": str(draw(st.integers(1, 4))),
        "spark.executor.cores": str(draw(st.integers(1, 2))),
        "spark.executor.memory": draw(st.sampled_from(["512m", "1g", "2g"])),
        "spark.driver.memory": draw(st.sampled_from(["512m", "1g"])),
        "spark.kubernetes.driver.label.team": team,
        "spark.kubernetes.executor.label.team": team,
        "spark.kubernetes.submission.waitAppCompletion": "false",
    }
    if draw(st.booleans()):
        conf["spark.eventLog.enabled"] = "false"  # the pinned value, given
    if draw(st.booleans()):
        conf["spark.kubernetes.executor.request.cores"] = draw(st.sampled_from(["500m", "1"]))
    if draw(st.booleans()):
        conf["spark.dynamicAllocation.enabled"] = "true"
        conf["spark.dynamicAllocation.shuffleTracking.enabled"] = "true"
        conf["spark.dynamicAllocation.maxExecutors"] = str(draw(st.integers(1, 4)))
    if draw(st.booleans()):
        conf["spark.executor.resource.gpu.amount"] = "0"
    return conf


@dataclass(frozen=True)
class Breach:
    """One broken rule: how the conf changes, and the key the refusal names."""

    rule: str
    key: str
    change: Callable[[dict], None]


def _set(key: str, value: str) -> Callable[[dict], None]:
    def change(conf: dict) -> None:
        conf[key] = value

    return change


def _drop(*keys: str) -> Callable[[dict], None]:
    def change(conf: dict) -> None:
        for key in keys:
            conf.pop(key, None)

    return change


def _dynamic_unbounded(conf: dict) -> None:
    conf.pop("spark.dynamicAllocation.maxExecutors", None)
    conf["spark.dynamicAllocation.enabled"] = "true"
    conf["spark.dynamicAllocation.shuffleTracking.enabled"] = "true"


def _many_executors(conf: dict) -> None:
    conf["spark.dynamicAllocation.enabled"] = "false"
    conf["spark.executor.instances"] = "7"


def _big_executors(conf: dict) -> None:
    _many_executors(conf)
    conf["spark.executor.instances"] = "4"
    conf.pop("spark.kubernetes.executor.request.cores", None)
    conf["spark.executor.cores"] = "3"  # 1 + 4 x 3 = 13 > 12


def _gpus(conf: dict) -> None:
    _many_executors(conf)
    conf["spark.executor.instances"] = "3"
    conf["spark.executor.resource.gpu.amount"] = "1"
    conf["spark.executor.resource.gpu.vendor"] = "nvidia.com"


def _memory(conf: dict) -> None:
    _many_executors(conf)
    conf["spark.executor.instances"] = "4"
    conf["spark.executor.memory"] = "6g"  # 4 x (6g + 10%) alone is over 24g


SA = "spark.kubernetes.authenticate"
CPU_KEYS = "the driver pod's cpu request + executors x spark.executor.cores"
MEMORY_KEYS = "the driver pod's memory request + executors x (executor memory + overhead)"
GPU_KEYS = "spark.driver.resource.gpu.amount + executors x spark.executor.resource.gpu.amount"
BREACHES = (
    Breach("denied_keys", f"{SA}.submission.oauthToken",
           _set(f"{SA}.submission.oauthToken", SECRET)),
    Breach("denied_keys", "spark.driver.extraJavaOptions",
           _set("spark.driver.extraJavaOptions", "-Dx=1")),
    Breach("pinned", "spark.eventLog.enabled", _set("spark.eventLog.enabled", "true")),
    Breach("allowed_namespaces", "spark.kubernetes.namespace",
           _set("spark.kubernetes.namespace", "kube-system")),
    Breach("allowed_service_accounts", f"{SA}.driver.serviceAccountName",
           _set(f"{SA}.driver.serviceAccountName", "cluster-admin")),
    Breach("allowed_service_accounts", f"{SA}.driver.serviceAccountName",
           _drop(f"{SA}.driver.serviceAccountName")),  # then it is `default`
    Breach("allowed_service_accounts", f"{SA}.executor.serviceAccountName",
           _set(f"{SA}.executor.serviceAccountName", "admin")),
    Breach("allowed_image_registries", "spark.kubernetes.container.image",
           _set("spark.kubernetes.container.image", "quay.io/someone/spark:4.0.1")),
    Breach("allowed_image_registries", "spark.kubernetes.executor.container.image",
           _set("spark.kubernetes.executor.container.image", "evil.example/spark:4.0.1")),
    Breach("allowed_image_registries", "spark.kubernetes.container.image",
           _set("spark.kubernetes.container.image", "registry.example.com/other/spark:4.0.1")),
    Breach("max_executors", "spark.executor.instances", _many_executors),
    Breach("max_executors", "spark.dynamicAllocation.maxExecutors", _dynamic_unbounded),
    Breach("max_cores", CPU_KEYS, _big_executors),
    Breach("max_memory", MEMORY_KEYS, _memory),
    Breach("max_gpus", GPU_KEYS, _gpus),
    Breach("required_labels", "spark.kubernetes.driver.label.team",
           _drop("spark.kubernetes.driver.label.team")),
    Breach("required_labels", "spark.kubernetes.executor.label.team",
           _drop("spark.kubernetes.executor.label.team")),
)  # fmt: skip
