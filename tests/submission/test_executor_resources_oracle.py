"""Our executor resources against Spark's own BasicExecutorFeatureStep (3.5.9, 4.1.4, 4.3.0).

One JVM per line runs java/ExecutorResourcesOracle.java with that pyspark distribution's jars
(the parity oracle's installs) and prints the executor container's requests and limits for
each conf; ours must print the same, and refuse exactly the confs Spark refuses.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.executor_resources import executor_resources
from testenv.runtime_image import parity_root

ORACLE = Path(__file__).with_name("java") / "ExecutorResourcesOracle.java"
BASE = {
    "spark.kubernetes.container.image": "apache/spark",
    "spark.driver.host": "localhost",
    "spark.kubernetes.memoryOverheadFactor": "0.1",
    "spark.kubernetes.resource.type": "java",
}
PYTHON = {
    "spark.kubernetes.memoryOverheadFactor": "0.4",
    "spark.kubernetes.resource.type": "python",
}
GPU = {
    "spark.executor.resource.gpu.amount": "2",
    "spark.executor.resource.gpu.vendor": "nvidia.com",
    "spark.executor.resource.gpu.discoveryScript": "/opt/getGpus.sh",
}
CASES: list[dict[str, str]] = [
    {},
    {"spark.executor.cores": "4"},
    {"spark.executor.cores": "4", "spark.kubernetes.executor.request.cores": "1500m"},
    {"spark.kubernetes.executor.limit.cores": "3"},
    {"spark.executor.memory": "5000m"},
    {"spark.executor.memory": "4097m"},
    {"spark.executor.memory": "3g", "spark.executor.memoryOverheadFactor": "0.25"},
    {"spark.executor.memory": "2g", "spark.executor.memoryOverhead": "100m"},
    {"spark.executor.minMemoryOverhead": "1g"},
    {"spark.executor.memoryOverhead": "200m", "spark.executor.minMemoryOverhead": "1g"},
    {"spark.executor.memory": "10g", "spark.executor.minMemoryOverhead": "500m"},
    {"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "2g"},
    {"spark.memory.offHeap.size": "2g"},
    {"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "1500000000"},
    {**PYTHON},
    {**PYTHON, "spark.executor.memory": "2g", "spark.executor.pyspark.memory": "512m"},
    {"spark.executor.pyspark.memory": "512m"},
    {**GPU},
    {**GPU, "spark.executor.cores": "2", "spark.executor.memory": "8g"},
    {"spark.executor.memory": " 2g "},
]


def spark_answers(version: str, confs: list[dict[str, str]]) -> list[str]:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the oracle needs Java 17")
    jars = sorted(parity_root().glob(f"pyspark-{version}/lib/python*/site-packages/pyspark/jars"))
    if not jars:
        pytest.skip(f"no pyspark {version} under {parity_root()} (tests/parity/install_spark.sh)")
    lines = []
    for conf in confs:
        text = "".join(f"{key}={value}\n" for key, value in {**BASE, **conf}.items())
        lines.append(base64.b64encode(text.encode()).decode() + "\n")
    done = subprocess.run(
        ["java", "-cp", f"{jars[0]}/*", str(ORACLE)],
        input="".join(lines),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout.splitlines()


def ours(version: str, conf: dict[str, str]) -> str:
    try:
        resources = executor_resources({**BASE, **conf}, version)
    except SparkConfError:
        return "ERR"

    def listed(quantities: dict[str, str]) -> str:
        return ",".join(f"{name}={value}" for name, value in sorted(quantities.items()))

    return f"{listed(resources.requests)};{listed(resources.limits)}"


@pytest.mark.server  # a JVM on the parity installs: `make check` leaves it out
@pytest.mark.parametrize("version", ["3.5.9", "4.1.4", "4.3.0"])
def test_executor_container_resources_equal_sparks(version: str) -> None:
    expected = spark_answers(version, CASES)
    assert len(expected) == len(CASES)
    got = [ours(version, conf) for conf in CASES]
    mismatches = [
        (conf, want, mine)
        for conf, want, mine in zip(CASES, expected, got, strict=True)
        if mine != (want.split(" ")[0] if want.startswith("ERR") else want)
    ]
    assert not mismatches, mismatches
    assert sum(answer.startswith("ERR") for answer in expected) < len(CASES)
