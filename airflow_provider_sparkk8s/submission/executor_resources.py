"""What an executor pod will request: Spark's BasicExecutorFeatureStep and
ResourceProfile.getResourcesForClusterManager for the default resource profile, per line.

The driver creates the executors later, from the conf it reads in spark.properties (the
submission's conf plus the system properties the driver steps add, such as
`spark.kubernetes.memoryOverheadFactor` and `spark.kubernetes.resource.type`), so that conf
is what is read here. Read from Spark's source (3.5, 4.1, 4.3) and checked against the
pods real Spark creates (tests/kueue):

- cores: `spark.executor.cores` (1); the cpu request is `spark.kubernetes.executor.request.cores`
  when set, else the cores; the cpu limit is `spark.kubernetes.executor.limit.cores`;
- memory request and limit, in Mi: `spark.executor.memory` (1g) plus the overhead, plus
  off-heap memory when `spark.memory.offHeap.enabled`, plus `spark.executor.pyspark.memory`
  for a Python application. The overhead is `spark.executor.memoryOverhead`, else
  max((int)(factor * memory), minimum), the factor `spark.executor.memoryOverheadFactor`
  when set, else `spark.kubernetes.memoryOverheadFactor`; the minimum is 384 MiB on 3.5 and
  `spark.executor.minMemoryOverhead` (384m) from 4.0;
- other resources: `spark.executor.resource.<name>.amount` as a limit on
  `<vendor>/<name>` (the vendor is required);
- an executor pod template's Spark container keeps its other requests and limits (Spark
  adds to them); its side-cars and init containers are part of the pod too.

Pure: a mapping and a template dict in, plain data out.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import EXECUTOR_CONTAINER
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.spec import KubeObject

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

LEGACY_MIN_OVERHEAD_MIB = 384
CONFIGURABLE_MIN_OVERHEAD_SINCE = (4, 0, 0)
RESOURCE_PREFIX = "spark.executor.resource."
_INT_MAX = (1 << 31) - 1


@record
class ExecutorResources:
    """The Spark container's resources, as BasicExecutorFeatureStep writes them."""

    cores: int
    cpu_request: str
    cpu_limit: str | None
    memory_mib: int  # the request and the limit ("<n>Mi")
    resource_limits: Mapping[str, str]  # "<vendor>/<name>" -> amount

    @property
    def requests(self) -> dict[str, str]:
        return {"memory": f"{self.memory_mib}Mi", "cpu": self.cpu_request}

    @property
    def limits(self) -> dict[str, str]:
        limits = {"memory": f"{self.memory_mib}Mi", **self.resource_limits}
        if self.cpu_limit is not None:
            limits["cpu"] = self.cpu_limit
        return limits


def _size_mib(
    conf: Mapping[str, str], version: tuple[int, int, int], key: str, default: str
) -> int:
    value = conf.get(key, default)
    return cv.parse_size(key, value, "m", iec=version[:2] >= cv.IEC_SIZES_SINCE)


def _java_int(value: float) -> int:
    # Scala's Double.toInt truncates toward zero and saturates at the Int range.
    return max(-(1 << 31), min(_INT_MAX, int(value)))


def overhead_factor(conf: Mapping[str, str]) -> float:
    own = "spark.executor.memoryOverheadFactor"
    if own in conf:
        factor = cv.parse_double(own, conf[own])
        if not 0 < factor < float("inf"):
            raise SparkConfError(own, conf[own], "a finite number > 0")
        return factor
    common = "spark.kubernetes.memoryOverheadFactor"
    factor = cv.parse_double(common, conf.get(common, "0.1"))
    if not 0 <= factor < float("inf"):
        raise SparkConfError(common, conf.get(common), "a finite number >= 0")
    return factor


def memory_overhead_mib(
    conf: Mapping[str, str], version: tuple[int, int, int], memory_mib: int
) -> int:
    if "spark.executor.memoryOverhead" in conf:
        return _size_mib(conf, version, "spark.executor.memoryOverhead", "0")
    if version >= CONFIGURABLE_MIN_OVERHEAD_SINCE:
        minimum = _size_mib(conf, version, "spark.executor.minMemoryOverhead", "384m")
    else:
        minimum = LEGACY_MIN_OVERHEAD_MIB
    return max(_java_int(overhead_factor(conf) * memory_mib), minimum)


def off_heap_mib(conf: Mapping[str, str], version: tuple[int, int, int]) -> int:
    """Utils.executorOffHeapMemorySizeAsMb: the size (a bare number is bytes) in whole MiB,
    counted only when off-heap memory is enabled, and then it must be positive."""
    if not cv.parse_bool(
        "spark.memory.offHeap.enabled", conf.get("spark.memory.offHeap.enabled", "false")
    ):
        return 0
    key = "spark.memory.offHeap.size"
    size = cv.parse_size(
        key, conf.get(key, "0"), "b", unit="m", iec=version[:2] >= cv.IEC_SIZES_SINCE
    )
    if size <= 0:
        raise SparkConfError(
            key,
            conf.get(key),
            "a size of at least 1m",
            "spark.memory.offHeap.size must be > 0 when spark.memory.offHeap.enabled == true",
        )
    return size


def pyspark_memory_mib(conf: Mapping[str, str], version: tuple[int, int, int]) -> int:
    if conf.get("spark.kubernetes.resource.type") != "python":
        return 0  # only a Python application's executors get it
    if "spark.executor.pyspark.memory" not in conf:
        return 0
    return _size_mib(conf, version, "spark.executor.pyspark.memory", "0")


def custom_resource_limits(conf: Mapping[str, str]) -> dict[str, str]:
    return cv.resource_quantities(conf, RESOURCE_PREFIX)


def executor_resources(conf: Mapping[str, str], spark_version: str) -> ExecutorResources:
    """The default profile's executor container resources on `spark_version`'s line."""
    version = cv.version_tuple(spark_version)
    cores = cv.parse_int("spark.executor.cores", conf.get("spark.executor.cores", "1"))
    if cores < 1:
        raise SparkConfError("spark.executor.cores", conf.get("spark.executor.cores"), ">= 1")
    memory = _size_mib(conf, version, "spark.executor.memory", "1g")
    total = (
        memory
        + memory_overhead_mib(conf, version, memory)
        + off_heap_mib(conf, version)
        + pyspark_memory_mib(conf, version)
    )
    request_key = "spark.kubernetes.executor.request.cores"
    request = conf.get(request_key)
    cpu_request = cv.validate_quantity(request_key, request) if request else str(cores)
    limit_key = "spark.kubernetes.executor.limit.cores"
    limit = conf.get(limit_key)
    return ExecutorResources(
        cores=cores,
        cpu_request=cpu_request,
        cpu_limit=cv.validate_quantity(limit_key, limit) if limit is not None else None,
        memory_mib=total,
        resource_limits=custom_resource_limits(conf),
    )


def _node_selector(conf: Mapping[str, str]) -> dict[str, str]:
    common = {
        k.removeprefix("spark.kubernetes.node.selector."): v
        for k, v in conf.items()
        if k.startswith("spark.kubernetes.node.selector.")
    }
    own = {
        k.removeprefix("spark.kubernetes.executor.node.selector."): v
        for k, v in conf.items()
        if k.startswith("spark.kubernetes.executor.node.selector.")
    }
    return {**common, **own}


def executor_pod_spec(
    conf: Mapping[str, str], spark_version: str, template: Mapping[str, Any] | None = None
) -> KubeObject:
    """The executor pod's spec as far as scheduling and quota see it: its containers with
    their resources, init containers, node selector, scheduler and the template's placement
    (tolerations, affinity, priority class)."""
    resources = executor_resources(conf, spark_version)
    spec: KubeObject = dict((template or {}).get("spec") or {})
    containers = [dict(c) for c in spec.get("containers") or ()]
    wanted = conf.get("spark.kubernetes.executor.podTemplateContainerName")
    named = [i for i, c in enumerate(containers) if wanted is not None and c.get("name") == wanted]
    index = named[0] if len(named) == 1 else 0
    spark_container: KubeObject = containers[index] if containers else {}
    others = [c for i, c in enumerate(containers) if i != index] if containers else []
    template_resources = dict(spark_container.get("resources") or {})
    spark_container = {
        **spark_container,
        "name": spark_container.get("name") or EXECUTOR_CONTAINER,
        "image": conf.get("spark.kubernetes.executor.container.image")
        or conf.get("spark.kubernetes.container.image")
        or "",
        "resources": {
            **template_resources,
            "requests": {**(template_resources.get("requests") or {}), **resources.requests},
            "limits": {**(template_resources.get("limits") or {}), **resources.limits},
        },
    }
    spec["containers"] = [*others, spark_container]  # Spark's container goes last
    node_selector = {**(spec.get("nodeSelector") or {}), **_node_selector(conf)}
    if node_selector:
        spec["nodeSelector"] = node_selector
    scheduler = conf.get("spark.kubernetes.executor.scheduler.name") or conf.get(
        "spark.kubernetes.scheduler.name"
    )
    if scheduler:
        spec["schedulerName"] = scheduler
    return spec


def executor_count(conf: Mapping[str, str]) -> int:
    """How many executors run at once at most: `spark.executor.instances` (2), or with
    dynamic allocation `spark.dynamicAllocation.maxExecutors`, which must then be set: a
    quota reservation needs a number, and Spark's default (Int.MaxValue) is none."""
    dynamic = cv.parse_bool(
        "spark.dynamicAllocation.enabled", conf.get("spark.dynamicAllocation.enabled", "false")
    )
    if not dynamic:
        count = cv.parse_int("spark.executor.instances", conf.get("spark.executor.instances", "2"))
        if count < 0:
            raise SparkConfError(
                "spark.executor.instances", conf.get("spark.executor.instances"), ">= 0"
            )
        return count
    key = "spark.dynamicAllocation.maxExecutors"
    if key not in conf:
        raise SparkConfError(
            key,
            None,
            "a whole number of executors",
            "it is unset; with dynamic allocation, Kueue admission reserves quota for "
            "maxExecutors, and Spark's default (2147483647) cannot be reserved",
        )
    maximum = cv.parse_int(key, conf[key])
    if maximum < 1:
        raise SparkConfError(key, conf[key], "a whole number >= 1")
    return maximum
