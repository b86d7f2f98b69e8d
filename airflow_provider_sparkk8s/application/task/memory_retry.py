"""The out-of-memory retry: which driver memory a try submits with, and why. Pure.

XCom is cleared when a task instance starts a new try, so a retry cannot read what the
previous try pushed. What survives is the previous try's driver pod: it carries the task
instance's labels, and the operator keeps it when it ran out of memory and a memory retry
may follow (on_finish_action="delete_pod" included). A try that finds an earlier driver of
its task instance that ended out of memory submits with both `spark.driver.memory` and
`spark.driver.memoryOverhead` raised by the factor, once: the sizes come from this task's
own conf, never compounded, and a raised try that runs out of memory again is final.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf_values import iec_sizes, parse_size

MEMORY_KEY = "spark.driver.memory"
OVERHEAD_KEY = "spark.driver.memoryOverhead"
DEFAULT_MEMORY = "1g"  # Spark's default spark.driver.memory


@record
class DriverMemory:
    """The driver's heap and overhead, in MiB, as a submission sets them."""

    memory_mib: int
    overhead_mib: int

    def conf(self) -> dict[str, str]:
        return {MEMORY_KEY: f"{self.memory_mib}m", OVERHEAD_KEY: f"{self.overhead_mib}m"}

    def describe(self) -> str:
        return f"{MEMORY_KEY}={self.memory_mib}m, {OVERHEAD_KEY}={self.overhead_mib}m"


def _limit_mib(driver_pod: Mapping[str, Any]) -> int | None:
    containers = (driver_pod.get("spec") or {}).get("containers") or [{}]
    limit = ((containers[-1].get("resources") or {}).get("limits") or {}).get("memory")
    if isinstance(limit, str) and limit.endswith("Mi") and limit[:-2].isdigit():
        return int(limit[:-2])
    return None


def planned_memory(
    spark_conf: Mapping[str, str], driver_pod: Mapping[str, Any], spark_version: str
) -> DriverMemory:
    """What a rendered submission gives its driver: the heap from the conf, the overhead as
    the container's memory limit minus the heap (Spark's limit is their sum)."""
    value = spark_conf.get(MEMORY_KEY, DEFAULT_MEMORY)
    memory = parse_size(MEMORY_KEY, value, "m", iec=iec_sizes(spark_version))
    limit = _limit_mib(driver_pod)
    return DriverMemory(memory, max((limit or memory) - memory, 0))


def raised(memory: DriverMemory, factor: float) -> DriverMemory:
    """Both sizes times `factor`, rounded up to whole MiB."""
    return DriverMemory(
        math.ceil(memory.memory_mib * factor), math.ceil(memory.overhead_mib * factor)
    )


def check_factor(factor: float | None) -> float | None:
    """None (no memory retry) or a factor above 1."""
    if factor is None:
        return None
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not factor > 1:
        raise SparkConfError("memory_factor", factor, "a number above 1, or None")
    if not math.isfinite(factor):
        raise SparkConfError("memory_factor", factor, "a finite number above 1, or None")
    return float(factor)


def ran_out_of_memory(pod: Mapping[str, Any]) -> bool:
    """A driver pod that ended, and ended out of memory."""
    state = reduce_application([pod], driver_pod_name=objects.name(pod))
    return state.state == "failed" and failure_kind(state.to_dict()) == "out_of_memory"


def out_of_memory_drivers(drivers: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the task instance's earlier drivers that ran out of memory."""
    return [objects.name(pod) or "" for pod in drivers if ran_out_of_memory(pod)]


def memory_xcom(
    used: DriverMemory, before: DriverMemory | None, factor: float | None
) -> dict[str, Any]:
    """The XCom's `driver_memory`: the sizes this try used and, on a memory retry, the sizes
    of the try that ran out of memory and the factor."""
    value: dict[str, Any] = {"used": used.conf()}
    if before is not None:
        value.update({"raised_from": before.conf(), "factor": factor})
    return value


def with_memory(parameters: SubmitParameters, memory: DriverMemory) -> SubmitParameters:
    """The task's parameters with the out-of-memory retry's sizes, which win over its own."""
    sizes = memory.conf()
    return replace(parameters, conf={**parameters.conf, **sizes}, driver_memory=sizes[MEMORY_KEY])


def retries_left(try_number: int | None, max_tries: int | None) -> bool:
    """Whether Airflow runs another try after this one (try numbers count from 1)."""
    return int(try_number or 1) <= int(max_tries or 0)


def keep_for_retry(
    kind: str, memory_raised: bool, factor: float | None, retries_left: bool
) -> bool:
    """An out-of-memory driver stays for the retry that raises the memory (the retry's only
    way to know: XCom is cleared between tries), when one can follow."""
    return kind == "out_of_memory" and not memory_raised and factor is not None and retries_left
