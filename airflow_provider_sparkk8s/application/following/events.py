"""The final event: what the trigger emits and the worker-side wait returns, one schema.

    {"status": "success" | "failed" | "timeout",
     "application_id", "namespace", "driver_pod",
     "state", "reason", "message", "exit_code", "termination_message",
     "executors": {"counts": {...}, "failures": [...]},
     "started_at", "finished_at",
     "queued_seconds",  # from the driver's creation to Kueue's admission; None without Kueue
     "cost": {"core_seconds", "gib_seconds", "gpu_seconds", "pending_seconds",
              "peak_executors", "executor_pods", "driver": {...}, "executors": {...}}}

Both paths end in the operator's `execute_complete` (and the sensor's), so both build the
payload here, from the application's ids and the last `ApplicationState`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState

TIMEOUT_REASONS = frozenset({"StartupTimeout", "RunTimeout", "QueueTimeout"})
FINAL_STATUSES = ("success", "failed", "timeout")


def final_event(
    application_id: str,
    namespace: str,
    driver_pod: str,
    state: ApplicationState,
    *,
    queued_seconds: float | None = None,
    cost: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The payload for `state`; a vanished driver (state `unknown`) is DriverPodNotFound.
    `cost`: `application.following.cost.Cost.to_dict()` of the pods followed (absent: not known)."""
    if state.state == "unknown":
        state = ApplicationState(
            state="failed",
            reason="DriverPodNotFound",
            message=f"driver pod {driver_pod} of application {application_id} in "
            f"namespace {namespace} no longer exists (deleted before it finished)",
            driver_pod=driver_pod,
            executors=state.executors,
        )
    if state.reason in TIMEOUT_REASONS:
        status = "timeout"
    else:
        status = "success" if state.state == "succeeded" else "failed"
    event = {
        "status": status,
        "application_id": application_id,
        "namespace": namespace,
        **state.to_dict(),
        "queued_seconds": queued_seconds,
    }
    if cost is not None:
        event["cost"] = dict(cost)
    return event


def is_complete_event(event: Any) -> bool:
    """Whether `event` is a whole final payload (a resume may bring none, or a partial one)."""
    return (
        isinstance(event, Mapping)
        and event.get("status") in FINAL_STATUSES
        and bool(event.get("state"))
    )
