"""Builders of plain pod dicts, shaped like the API server's, for the tests of the pure
monitoring and following code and for benchmarks/bench_metrics_sink.py."""

from __future__ import annotations

from typing import Any

APP = "spark-0123456789abcdef0123456789abcdef"


def pod(
    name: str = "app-driver",
    *,
    role: str = "driver",
    app: str = APP,
    phase: str | None = "Pending",
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    rv: str = "1",
    uid: str | None = None,
    exec_id: str | None = None,
    restart_policy: str = "Never",
    **metadata: Any,
) -> dict[str, Any]:
    labels = {"spark-app-selector": app, "spark-role": role}
    if exec_id is not None:
        labels["spark-exec-id"] = exec_id
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if containers is not None:
        status["containerStatuses"] = containers
    if init_containers is not None:
        status["initContainerStatuses"] = init_containers
    if conditions is not None:
        status["conditions"] = conditions
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"uid-{name}",
            "resourceVersion": rv,
            "labels": labels,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            **metadata,
        },
        "spec": {
            "restartPolicy": restart_policy,
            "containers": [{"name": "spark-kubernetes-driver"}],
        },
        "status": status,
    }


def running(name: str = "spark-kubernetes-driver") -> dict[str, Any]:
    return {"name": name, "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}}


def waiting(reason: str, message: str | None = None, name: str = "spark-kubernetes-driver"):
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    return {"name": name, "state": {"waiting": state}}


def terminated(
    exit_code: int,
    reason: str | None = None,
    message: str | None = None,
    name: str = "spark-kubernetes-driver",
) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code, "finishedAt": "2026-01-01T00:01:00Z"}
    if reason:
        state["reason"] = reason
    if message:
        state["message"] = message
    return {"name": name, "state": {"terminated": state}}


SCHEDULED = [{"type": "PodScheduled", "status": "True"}]
