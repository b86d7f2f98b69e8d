"""Which kind of failure a failed application is, from what the reducer knew: pure.

The kinds are the typed outcomes of `errors` (their `kind` names): the operator, the
sensor, the CLI and the retry policy all decide from this one function, fed the final
event (or an `ApplicationState.to_dict()`) and the last exception line of the driver log.

Order matters, and why:
1. out of memory first: a driver OOMKilled is also "exit code 137", and an evicted pod may
   carry an OOM; more memory is what would help.
2. then the configuration: an image its registry says does not exist (`ImageNotFound`,
   `monitoring.image_pull`). No try mends it: only a new image name, tag or credentials.
3. then the cluster: a disruption condition, a deletion, a vanished driver, an eviction or
   a lost node, an image or a schedule that never came (the startup timeout), quota that
   never came (Kueue's queue timeout: the code never ran, a later try may find room).
   Running it again elsewhere, or later, may well work.
4. then the run timeout, its own kind: neither obviously the code nor the cluster.
5. anything else that exited non-zero is the application's own failure (Spark's exit
   exception, the user's `sys.exit(n)`, an uncaught exception).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from airflow_provider_sparkk8s.monitoring.image_pull import IMAGE_NOT_FOUND

FailureKind = Literal[
    "application_error", "configuration_error", "out_of_memory", "infrastructure", "timeout"
]

# Spark's SparkExitCode.OOM: the driver's uncaught-exception handler met an OutOfMemoryError.
SPARK_OOM_EXIT_CODE = 52
OOM_REASON = "OOMKilled"
OOM_TEXT = "java.lang.OutOfMemoryError"
# SIGKILL and SIGTERM from outside: the kubelet or a deletion stopped the container.
SIGNAL_EXIT_CODES = frozenset({137, 143})
# Pod and container reasons the cluster gives when it, not the application, ended the pod.
INFRASTRUCTURE_REASONS = frozenset(
    {
        "Evicted",
        "Preempting",
        "Preempted",
        "NodeLost",
        "NodeShutdown",
        "Shutdown",
        "Terminated",
        "UnexpectedAdmissionError",
        "NodeAffinity",
        "OutOfcpu",
        "OutOfmemory",
        "OutOfpods",
        "ContainerStatusUnknown",
        "DriverPodNotFound",
        "StartupTimeout",
        "QueueTimeout",
        "StartError",
        "PodFailed",  # failed with no container ever reporting an exit
    }
)
# What the submission named wrongly, so that no later try can start the driver.
CONFIGURATION_REASONS = frozenset({IMAGE_NOT_FOUND})
TIMEOUT_REASONS = frozenset({"RunTimeout", "DeadlineExceeded"})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def failure_kind(event: Mapping[str, Any], exception_line: str | None = None) -> FailureKind:
    """The kind of the failed (or timed-out) application `event` describes."""
    reason = _text(event.get("reason"))
    exit_code = event.get("exit_code")
    texts = (
        exception_line,
        event.get("exit_exception"),
        event.get("termination_message"),
        event.get("message"),
    )
    if (
        reason == OOM_REASON
        or exit_code == SPARK_OOM_EXIT_CODE
        or any(OOM_TEXT in _text(text) for text in texts)
    ):
        return "out_of_memory"
    if reason in CONFIGURATION_REASONS:
        return "configuration_error"
    if reason in INFRASTRUCTURE_REASONS or event.get("disruption"):
        return "infrastructure"
    if reason in TIMEOUT_REASONS:
        return "timeout"
    if exit_code in SIGNAL_EXIT_CODES and not (exception_line or event.get("exit_exception")):
        return "infrastructure"  # killed from outside, with nothing the application said
    return "application_error"
