"""Container logs for KWOK's fake pods: Spark-shaped lines, each marked as generated test
data, in the CRI log format that KWOK's kubelet server replays for `pods/log`, and the
`ClusterLogs` config that points the Spark containers at them. Real driver logs come from
real Spark on the real node (testenv/realnode); nothing here is ever shown as a run.

KWOK replays a fixed file for every matching pod, so the lines cannot carry each
pod's own start time. They are dated a day after the control plane starts: any
`sinceTime`/`sinceSeconds` a test or the trigger asks for during the run keeps
them, as it would keep a real driver's lines written after its submission.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"
LOG_DATE_OFFSET = datetime.timedelta(days=1)
GENERATED = "[kwok-generated test data, no Spark ran]"

# (stream, line): Spark-shaped lines for the log-streaming tests, each marked as generated so
# nobody takes them for a run. Spark logs to stderr through log4j; a program prints to stdout.
DRIVER_LINES: tuple[tuple[str, str], ...] = (
    ("stderr", f"INFO SparkContext: Running Spark version 0.0.0-kwok {GENERATED}"),
    ("stderr", f"INFO SparkContext: Submitted application: kwok {GENERATED}"),
    ("stderr", f"INFO KubernetesClusterSchedulerBackend: ready {GENERATED}"),
    ("stderr", f"INFO DAGScheduler: Job 0 finished {GENERATED}"),
    ("stdout", f"driver program output {GENERATED}"),
    ("stderr", f"INFO SparkContext: Successfully stopped SparkContext {GENERATED}"),
)
EXECUTOR_LINES: tuple[tuple[str, str], ...] = (
    ("stderr", f"INFO CoarseGrainedExecutorBackend: Started daemon {GENERATED}"),
    ("stderr", f"INFO Executor: Starting executor ID 1 {GENERATED}"),
    ("stderr", f"INFO Executor: Finished task 0.0 in stage 0.0 (TID 0) {GENERATED}"),
    ("stderr", f"INFO CoarseGrainedExecutorBackend: Driver commanded a shutdown {GENERATED}"),
)


def _rfc3339_nano(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def cri_log(lines: tuple[tuple[str, str], ...], first: datetime.datetime) -> str:
    """`lines` as a CRI container log (`<time> <stream> F <line>`), one millisecond apart."""
    step = datetime.timedelta(milliseconds=1)
    return "".join(
        f"{_rfc3339_nano(first + index * step)} {stream} F {line}\n"
        for index, (stream, line) in enumerate(lines)
    )


def cluster_logs_config(driver_log: Path, executor_log: Path) -> dict[str, Any]:
    """A KWOK `ClusterLogs` for every pod: the Spark containers read these files;
    other containers have no log (KWOK answers their `pods/log` with an error)."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "sparkk8s-spark-containers"},
        "spec": {
            "logs": [
                {"containers": [container], "logsFile": str(path), "follow": False}
                for container, path in (
                    (DRIVER_CONTAINER, driver_log),
                    (EXECUTOR_CONTAINER, executor_log),
                )
            ]
        },
    }


def write_spark_logs(directory: Path, started: datetime.datetime) -> Path:
    """Writes the driver and executor logs and KWOK's config for them; returns the config."""
    directory.mkdir(parents=True, exist_ok=True)
    dated = started + LOG_DATE_OFFSET
    driver_log, executor_log = directory / "driver.log", directory / "executor.log"
    driver_log.write_text(cri_log(DRIVER_LINES, dated))
    executor_log.write_text(cri_log(EXECUTOR_LINES, dated))
    config = directory / "kwok-logs.yaml"
    # JSON is YAML, and KWOK reads its configs as YAML.
    config.write_text(json.dumps(cluster_logs_config(driver_log, executor_log), indent=2))
    return config
