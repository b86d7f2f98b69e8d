"""BasicExecutorFeatureStep's resource rules per Spark line, on plain conf mappings.

The expected numbers are Spark's arithmetic worked by hand; test_executor_resources_oracle.py
runs the same confs through Spark's own classes (3.5.9, 4.1.4, 4.3.0).
"""

from __future__ import annotations

import re

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.executor_resources import (
    executor_count,
    executor_pod_spec,
    executor_resources,
)

IMAGE = {"spark.kubernetes.container.image": "apache/spark:4.3.0"}
# What the driver's spark.properties hold for a JVM application (basic_driver's system
# properties: the common factor, 0.1 for the JVM, 0.4 for Python and R).
JVM = {
    **IMAGE,
    "spark.kubernetes.memoryOverheadFactor": "0.1",
    "spark.kubernetes.resource.type": "java",
}
PYTHON = {
    **IMAGE,
    "spark.kubernetes.memoryOverheadFactor": "0.4",
    "spark.kubernetes.resource.type": "python",
}
LINES = ("3.5.9", "4.1.4", "4.3.0")


@pytest.mark.parametrize("version", LINES)
def test_defaults_one_core_and_1g_plus_the_384_minimum(version):
    resources = executor_resources(JVM, version)
    assert resources.requests == {"memory": "1408Mi", "cpu": "1"}
    assert resources.limits == {"memory": "1408Mi"}


@pytest.mark.parametrize("version", LINES)
def test_cores_and_request_cores(version):
    assert executor_resources({**JVM, "spark.executor.cores": "3"}, version).requests["cpu"] == "3"
    conf = {**JVM, "spark.executor.cores": "3", "spark.kubernetes.executor.request.cores": "500m"}
    resources = executor_resources(conf, version)
    assert resources.cores == 3 and resources.requests["cpu"] == "500m"


@pytest.mark.parametrize("version", LINES)
def test_limit_cores_is_a_limit_only(version):
    conf = {**JVM, "spark.kubernetes.executor.limit.cores": "2"}
    resources = executor_resources(conf, version)
    assert resources.limits["cpu"] == "2" and resources.requests["cpu"] == "1"


@pytest.mark.parametrize("version", LINES)
def test_factor_applies_above_the_minimum_and_truncates(version):
    # 0.1 * 5000 = 500 > 384; 0.1 * 4097 = 409.7 -> 409 (Scala's toInt).
    assert executor_resources({**JVM, "spark.executor.memory": "5000m"}, version).memory_mib == 5500
    assert executor_resources({**JVM, "spark.executor.memory": "4097m"}, version).memory_mib == 4506


@pytest.mark.parametrize("version", LINES)
def test_executor_factor_wins_over_the_common_one(version):
    conf = {**JVM, "spark.executor.memory": "4g", "spark.executor.memoryOverheadFactor": "0.25"}
    assert executor_resources(conf, version).memory_mib == 4096 + 1024


@pytest.mark.parametrize("version", LINES)
def test_python_apps_get_the_drivers_0_4_factor_and_pyspark_memory(version):
    conf = {**PYTHON, "spark.executor.memory": "2g", "spark.executor.pyspark.memory": "512m"}
    assert executor_resources(conf, version).memory_mib == 2048 + 819 + 512


@pytest.mark.parametrize("version", LINES)
def test_pyspark_memory_only_counts_for_python(version):
    conf = {**JVM, "spark.executor.pyspark.memory": "512m"}
    assert executor_resources(conf, version).memory_mib == 1408


@pytest.mark.parametrize("version", LINES)
def test_explicit_overhead_ignores_factor_and_minimum(version):
    conf = {
        **JVM,
        "spark.executor.memoryOverhead": "100m",
        "spark.executor.minMemoryOverhead": "1g",
    }
    assert executor_resources(conf, version).memory_mib == 1124


def test_min_memory_overhead_exists_from_4_0():
    conf = {**JVM, "spark.executor.minMemoryOverhead": "1g"}
    assert executor_resources(conf, "3.5.9").memory_mib == 1024 + 384
    assert executor_resources(conf, "4.1.4").memory_mib == 1024 + 1024
    assert executor_resources(conf, "4.3.0").memory_mib == 1024 + 1024


@pytest.mark.parametrize("version", LINES)
def test_off_heap_counts_only_when_enabled(version):
    conf = {**JVM, "spark.memory.offHeap.size": "2g"}
    assert executor_resources(conf, version).memory_mib == 1408
    enabled = {**conf, "spark.memory.offHeap.enabled": "true"}
    assert executor_resources(enabled, version).memory_mib == 1408 + 2048
    with pytest.raises(SparkConfError, match=re.escape("spark.memory.offHeap.size")):
        executor_resources({**JVM, "spark.memory.offHeap.enabled": "true"}, version)


def test_iec_units_only_from_4_2():
    conf = {**JVM, "spark.executor.memory": "2gib"}
    assert executor_resources(conf, "4.3.0").memory_mib == 2048 + 384
    with pytest.raises(SparkConfError, match=re.escape("4.2")):
        executor_resources(conf, "4.1.4")


@pytest.mark.parametrize("version", LINES)
def test_gpus_are_limits_on_vendor_slash_name(version):
    conf = {
        **JVM,
        "spark.executor.resource.gpu.amount": "2",
        "spark.executor.resource.gpu.vendor": "nvidia.com",
        "spark.executor.resource.gpu.discoveryScript": "/opt/gpu.sh",
    }
    assert executor_resources(conf, version).limits == {"memory": "1408Mi", "nvidia.com/gpu": "2"}
    no_vendor = {**JVM, "spark.executor.resource.gpu.amount": "1"}
    with pytest.raises(SparkConfError, match="vendor was not specified"):
        executor_resources(no_vendor, version)


def test_bad_values_name_their_key():
    with pytest.raises(SparkConfError, match=re.escape("spark.executor.cores")):
        executor_resources({**JVM, "spark.executor.cores": "0"}, "4.3.0")
    with pytest.raises(SparkConfError, match=re.escape("spark.kubernetes.executor.request.cores")):
        executor_resources({**JVM, "spark.kubernetes.executor.request.cores": "lots"}, "4.3.0")
    with pytest.raises(SparkConfError, match=re.escape("spark.executor.memoryOverheadFactor")):
        executor_resources({**JVM, "spark.executor.memoryOverheadFactor": "0"}, "4.3.0")


def test_template_keeps_its_other_resources_side_cars_and_placement():
    template = {
        "spec": {
            "tolerations": [{"key": "spot", "operator": "Exists"}],
            "nodeSelector": {"pool": "spark"},
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [
                {"name": "sidecar", "resources": {"requests": {"cpu": "100m"}}},
                {
                    "name": "spark",
                    "resources": {
                        "requests": {"cpu": "8", "memory": "64Gi", "ephemeral-storage": "1Gi"},
                        "limits": {"example.com/fpga": "1"},
                    },
                },
            ],
        }
    }
    conf = {
        **JVM,
        "spark.kubernetes.executor.podTemplateContainerName": "spark",
        "spark.kubernetes.executor.node.selector.zone": "a",
    }
    spec = executor_pod_spec(conf, "4.3.0", template)
    sidecar, spark = spec["containers"]
    assert sidecar["name"] == "sidecar" and spark["name"] == "spark"
    assert spark["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1408Mi",
        "ephemeral-storage": "1Gi",
    }
    assert spark["resources"]["limits"] == {"example.com/fpga": "1", "memory": "1408Mi"}
    assert spec["initContainers"] == template["spec"]["initContainers"]
    assert spec["nodeSelector"] == {"pool": "spark", "zone": "a"}
    assert spec["tolerations"] == template["spec"]["tolerations"]
    assert "resources" in template["spec"]["containers"][1]  # the template is not changed
    assert template["spec"]["containers"][1]["resources"]["requests"]["cpu"] == "8"


def test_unnamed_template_container_is_the_first():
    template = {"spec": {"containers": [{"name": "first"}, {"name": "second"}]}}
    spec = executor_pod_spec(JVM, "4.3.0", template)
    assert [c["name"] for c in spec["containers"]] == ["second", "first"]
    assert spec["containers"][-1]["resources"]["requests"]["memory"] == "1408Mi"


def test_executor_count_static_and_dynamic():
    assert executor_count({}) == 2  # Spark's default on Kubernetes
    assert executor_count({"spark.executor.instances": "5"}) == 5
    dynamic = {"spark.dynamicAllocation.enabled": "true", "spark.executor.instances": "1"}
    assert executor_count({**dynamic, "spark.dynamicAllocation.maxExecutors": "7"}) == 7
    with pytest.raises(SparkConfError, match="maxExecutors") as refused:
        executor_count(dynamic)
    assert "2147483647" in str(refused.value)
