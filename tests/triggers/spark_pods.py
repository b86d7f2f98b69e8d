"""An Airflow connection to the test control plane, and triggers for it (the Spark-labelled
pods themselves: `testenv.harness.pods.spark_pod`)."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import pytest


def connection_for(monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> str:
    """A `spark_k8s` connection (by environment variable) that reads `kubeconfig`."""
    conn_id = f"spark_k8s_test_{secrets.token_hex(4)}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps({"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}),
    )
    return conn_id


def make_trigger(conn_id: str, namespace: str, app_id: str, driver: str, **settings: Any):  # type: ignore[no-untyped-def]
    """A trigger for the test plane: quick resyncs, logs off unless a test turns them on."""
    from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

    kwargs: dict[str, Any] = {
        "application_id": app_id,
        "namespace": namespace,
        "kubernetes_conn_id": conn_id,
        "driver_pod_name": driver,
        "resync_interval": 5.0,
        "stream_logs": False,
    }
    kwargs.update(settings)
    return SparkK8sApplicationTrigger(**kwargs)


async def final_event(trigger: Any, timeout: float = 60.0) -> dict[str, Any]:
    """The payload of the trigger's one and only event."""

    async def first() -> dict[str, Any]:
        events = [event async for event in trigger.run()]
        assert len(events) == 1, events
        return events[0].payload

    return await asyncio.wait_for(first(), timeout)
