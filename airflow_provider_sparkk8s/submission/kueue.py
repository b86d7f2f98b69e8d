"""Kueue admission of the whole application: a prebuilt Workload and a one-pod group.

Opt-in with `spark.kubernetes.kueue.queueName=<LocalQueue>` (the operator's `conf`, the
CLI's `--conf`). Kueue's pod integration (v0.17) is what the application goes through:

- The Workload is built here ("prebuilt", `kueue.x-k8s.io/prebuilt-workload-name`), named
  after the application id, with two PodSets: `driver` (1, the rendered driver pod) and
  `executor` (spark.executor.instances, or maxExecutors with dynamic allocation), each
  requesting exactly what Spark will put on those pods (`executor_resources`). It is sent
  before the driver pod, so Kueue finds it when the pod arrives.
- The driver pod is the one member of a pod group of the same name
  (`pod-group-name`, `pod-group-total-count: 1`, `role-hash: driver`), so Kueue matches it
  to the `driver` PodSet by name and accepts a Workload that holds more PodSets than the
  group has pods. Kueue's webhook gates the driver (`schedulingGates`) until the Workload is
  admitted, i.e. until the ClusterQueue has room for the driver and every executor at once.
- The executors are created later by the driver, owned by the driver pod. Kueue does not
  gate a pod whose owner is a pod it manages, so they start at once, inside the quota the
  Workload already holds for them: no executor exists before admission, and none waits
  after it.
- `retriable-in-group: "false"`: when the driver ends, the group is finished, the Workload
  is Finished and its quota freed. Kueue makes the driver pod the Workload's owner, so the
  garbage collector removes the Workload with the pod.

Pod groups alone do not fit: Kueue creates a group's Workload only once all its pods exist,
and Spark's executors only exist after the driver runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import KUEUE_QUEUE_LABEL
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission import executor_resources as er
from airflow_provider_sparkk8s.submission import pod_template
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.podops import merge_into
from airflow_provider_sparkk8s.submission.spec import DriverSpec, KubeObject, SparkPod

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

QUEUE_NAME_KEY = "spark.kubernetes.kueue.queueName"
# Ours, read by the faces (not by Spark): how long Kueue may keep the application queued.
QUEUE_TIMEOUT_KEY = "spark.kubernetes.kueue.queueTimeout"
API_VERSION = "kueue.x-k8s.io/v1beta2"
KIND = "Workload"
LOCAL_QUEUE_KIND = "LocalQueue"
QUEUE_LABEL = KUEUE_QUEUE_LABEL
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
RETRIABLE_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
# Kueue routes a Workload's events to its pod group's reconciler only with this annotation
# (what Kueue puts on the Workloads it builds for groups): without it, an admission would
# not ungate the driver until some pod event happened to come.
GROUP_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/is-group-workload"
DRIVER_POD_SET = "driver"
EXECUTOR_POD_SET = "executor"
# What Kueue reads of a PodSet's pod spec: resources (quota) and placement (flavors).
_SCHEDULING_FIELDS = (
    "nodeSelector",
    "tolerations",
    "affinity",
    "priorityClassName",
    "priority",
    "schedulerName",
    "runtimeClassName",
    "overhead",
    "topologySpreadConstraints",
)
_CONTAINER_FIELDS = ("name", "image", "resources", "restartPolicy")
_MANUAL_PREFIXES = tuple(
    f"spark.kubernetes.{role}.{kind}.kueue.x-k8s.io/"
    for role in ("driver", "executor")
    for kind in ("label", "annotation")
)


def queue_name(conf: Mapping[str, str]) -> str | None:
    """The LocalQueue asked for, checked as Kueue checks the label; None: no admission."""
    queue_timeout_seconds(conf)
    name = conf.get(QUEUE_NAME_KEY)
    if name is None:
        return None
    if not name or not cv.is_dns1123_subdomain(name) or len(name) > 63:
        raise SparkConfError(
            QUEUE_NAME_KEY, name, "the name of a LocalQueue in the application's namespace"
        )
    manual = sorted(key for key in conf if key.startswith(_MANUAL_PREFIXES))
    if manual:
        raise SparkConfError(
            manual[0],
            conf[manual[0]],
            f"no kueue.x-k8s.io/ labels or annotations of your own with {QUEUE_NAME_KEY}",
            "the provider sets Kueue's labels and annotations itself",
        )
    return name


def queue_timeout_seconds(conf: Mapping[str, Any]) -> float | None:
    """`spark.kubernetes.kueue.queueTimeout` (a Spark time, seconds by default: `30min`,
    `900`) as seconds; None: no limit. Refused when not positive, or without a queue."""
    value = conf.get(QUEUE_TIMEOUT_KEY)
    if value is None:
        return None
    accepted = "a positive time such as 900s or 30min, with spark.kubernetes.kueue.queueName"
    text = str(value)
    if conf.get(QUEUE_NAME_KEY) is None:
        raise SparkConfError(QUEUE_TIMEOUT_KEY, text, accepted, f"{QUEUE_NAME_KEY} is not set")
    millis = cv.parse_time_ms(QUEUE_TIMEOUT_KEY, text, default_unit="s")
    if millis <= 0:
        raise SparkConfError(QUEUE_TIMEOUT_KEY, text, accepted)
    return millis / 1000


def workload_name(conf: DriverConf) -> str:
    return conf.app_id


def workload_of(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, name) of the prebuilt Workload a driver pod was admitted through, if any.

    Deleting the driver pod lets the garbage collector take the Workload (Kueue makes the
    pod its owner); a kill deletes it too, so none is left even before Kueue got to it."""
    metadata = pod.get("metadata") or {}
    name = (metadata.get("labels") or {}).get(PREBUILT_LABEL)
    namespace = metadata.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        return None
    return namespace, name


def admitted_driver(conf: DriverConf, spec: DriverSpec, queue: str) -> DriverSpec:
    """The fold's result with the driver pod made the one member of the Workload's group."""
    pod = dict(spec.pod.pod)
    name = workload_name(conf)
    merge_into(
        pod, ("metadata", "labels"), {QUEUE_LABEL: queue, GROUP_LABEL: name, PREBUILT_LABEL: name}
    )
    merge_into(
        pod,
        ("metadata", "annotations"),
        {
            TOTAL_COUNT_ANNOTATION: "1",
            ROLE_HASH_ANNOTATION: DRIVER_POD_SET,
            RETRIABLE_ANNOTATION: "false",
        },
    )
    return DriverSpec(
        pod=SparkPod(pod, spec.pod.container),
        pre_resources=spec.pre_resources,
        resources=spec.resources,
        system_properties=spec.system_properties,
    )


def _container(container: Mapping[str, Any]) -> KubeObject:
    kept = {k: container[k] for k in _CONTAINER_FIELDS if k in container}
    resources = dict(container.get("resources") or {})
    limits = dict(resources.get("limits") or {})
    # The API server defaults a missing request to its limit; Kueue counts requests.
    requests = {**limits, **(resources.get("requests") or {})}
    if requests or limits:
        kept["resources"] = {
            **resources,
            **({"requests": requests} if requests else {}),
            **({"limits": limits} if limits else {}),
        }
    return kept


def pod_set_spec(spec: Mapping[str, Any]) -> KubeObject:
    """A pod spec reduced to what Kueue reads: containers' resources and placement."""
    reduced: KubeObject = {k: spec[k] for k in _SCHEDULING_FIELDS if k in spec}
    reduced["containers"] = [_container(c) for c in spec.get("containers") or ()]
    if spec.get("initContainers"):
        reduced["initContainers"] = [_container(c) for c in spec["initContainers"]]
    return reduced


def pod_sets(
    conf: DriverConf, driver_pod: Mapping[str, Any], driver_conf: Mapping[str, str]
) -> list[KubeObject]:
    """The Workload's PodSets: the driver pod as rendered, and the executors as the driver
    will create them from `driver_conf` (its spark.properties)."""
    sets: list[KubeObject] = [
        {
            "name": DRIVER_POD_SET,
            "count": 1,
            "template": {"spec": pod_set_spec(driver_pod.get("spec") or {})},
        }
    ]
    count = er.executor_count(driver_conf)
    if count > 0:
        spec = er.executor_pod_spec(
            driver_conf, conf.spark_version, pod_template.executor_template(conf)
        )
        sets.append(
            {"name": EXECUTOR_POD_SET, "count": count, "template": {"spec": pod_set_spec(spec)}}
        )
    return sets


def workload(
    conf: DriverConf, queue: str, driver_pod: Mapping[str, Any], driver_conf: Mapping[str, str]
) -> KubeObject:
    """The prebuilt Workload for the rendered driver pod and its conf."""
    labels = {
        k: v
        for k, v in ((driver_pod.get("metadata") or {}).get("labels") or {}).items()
        if k.startswith("spark-") and k != "spark-role"
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": workload_name(conf),
            "namespace": conf.namespace,
            "labels": labels,
            "annotations": {GROUP_WORKLOAD_ANNOTATION: "true"},
        },
        "spec": {"queueName": queue, "podSets": pod_sets(conf, driver_pod, driver_conf)},
    }
