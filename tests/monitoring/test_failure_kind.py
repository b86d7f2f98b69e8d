"""Which kind a failed application is, from the reducer's data (plain dicts and pods)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import FAILURE_CLASSES
from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from testenv.harness.pod_builders import pod, terminated


def failed(**fields: Any) -> dict[str, Any]:
    return {"status": "failed", "state": "failed", **fields}


@pytest.mark.parametrize(
    ("event", "line", "kind"),
    [
        # The application: its exit code, with or without an exception.
        (failed(reason="Error", exit_code=1), "RuntimeError: boom", "application_error"),
        (failed(reason="Error", exit_code=3), None, "application_error"),
        (failed(reason="Error", exit_code=1, exit_exception="org.apache.spark.sql.AnalysisException: x"), None, "application_error"),
        # Out of memory: the container's reason, Spark's exit code 52, the JVM's error.
        (failed(reason="OOMKilled", exit_code=137), None, "out_of_memory"),
        (failed(reason="Error", exit_code=52), None, "out_of_memory"),
        (failed(reason="Error", exit_code=1), "java.lang.OutOfMemoryError: Java heap space", "out_of_memory"),
        (failed(reason="Error", exit_code=1, exit_exception="java.lang.OutOfMemoryError: GC overhead limit exceeded"), None, "out_of_memory"),
        (failed(reason="Evicted", message="low on memory", disruption="TerminationByKubelet", exit_code=137, termination_message="x"), None, "infrastructure"),
        # The cluster.
        (failed(reason="Evicted", message="The node was low on memory."), None, "infrastructure"),
        (failed(reason="DriverPodNotFound"), None, "infrastructure"),
        (failed(reason="Error", exit_code=143, disruption="Deleted"), None, "infrastructure"),
        (failed(reason="Error", exit_code=1, disruption="PreemptionByScheduler"), "RuntimeError: stopped", "infrastructure"),
        (failed(reason="NodeLost"), None, "infrastructure"),
        (failed(reason="PodFailed"), None, "infrastructure"),
        (failed(reason="Error", exit_code=137), None, "infrastructure"),  # SIGKILL, nothing said
        ({"status": "timeout", "state": "failed", "reason": "StartupTimeout"}, None, "infrastructure"),
        ({"status": "timeout", "state": "failed", "reason": "QueueTimeout"}, None, "infrastructure"),
        # The configuration: an image its registry says does not exist.
        (failed(reason="ImageNotFound", message='image "x" of container d does not exist'), None, "configuration_error"),
        (failed(reason="ImageNotFound", disruption="Deleted"), None, "configuration_error"),
        # The run timeout is its own kind.
        ({"status": "timeout", "state": "failed", "reason": "RunTimeout"}, None, "timeout"),
    ],
)  # fmt: skip
def test_kinds(event: dict[str, Any], line: str | None, kind: str) -> None:
    assert failure_kind(event, line) == kind


def test_an_oom_killed_driver_pod_is_out_of_memory_as_reduced() -> None:
    killed = pod(phase="Failed", containers=[terminated(137, "OOMKilled")])
    assert failure_kind(reduce_application([killed]).to_dict()) == "out_of_memory"


def test_every_kind_has_its_exception_class() -> None:
    kinds = {
        "application_error",
        "configuration_error",
        "out_of_memory",
        "infrastructure",
        "timeout",
    }
    assert kinds < set(FAILURE_CLASSES)
    assert all(FAILURE_CLASSES[kind].kind == kind for kind in FAILURE_CLASSES)
