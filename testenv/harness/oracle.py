"""Real spark-submit (the oracle) as the parity runner and the benchmarks run it: where each
Spark line's pyspark install is (tests/parity/install_spark.sh puts it there) and the clean
environment it runs in."""

from __future__ import annotations

import os
from pathlib import Path

from testenv.runtime_image import parity_root


def spark_submit_path(line: str) -> Path:
    return parity_root() / f"pyspark-{line}" / "bin" / "spark-submit"


def spark_home(line: str) -> Path:
    return next((parity_root() / f"pyspark-{line}").glob("lib/python*/site-packages/pyspark"))


def oracle_environment(line: str, scenario_env: dict[str, str], home: Path) -> dict[str, str]:
    """A clean environment: nothing of ours leaks in (no kubeconfig, no Spark/Hadoop dirs)."""
    venv_bin = spark_submit_path(line).parent
    env = {
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "SPARK_HOME": str(spark_home(line)),
        "HOME": str(home),  # fabric8 would read ~/.kube/config
        "KUBECONFIG": str(home / "no-kubeconfig"),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
    }
    # Faster JVM start-up for the oracle; it changes nothing of what is sent.
    env["SPARK_SUBMIT_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    if "JAVA_HOME" in os.environ:
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    env.update(scenario_env)
    return env
