"""Spark-labelled pods on the test control plane, and an Airflow connection to reach it."""

from __future__ import annotations

import json
import secrets
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.pods import pod_manifest


def new_app_id() -> str:
    return "spark-" + uuid.uuid4().hex


def spark_pod(
    name: str,
    app_id: str,
    role: str = "driver",
    annotations: dict[str, str] | None = None,
    **manifest: Any,
) -> dict[str, Any]:
    container = "spark-kubernetes-driver" if role == "driver" else "spark-kubernetes-executor"
    labels = {"spark-app-selector": app_id, "spark-role": role}
    return pod_manifest(name, annotations, labels, container_names=(container,), **manifest)


def connection_for(monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> str:
    """A `spark_k8s` connection (by environment variable) that reads `kubeconfig`."""
    conn_id = f"spark_k8s_test_{secrets.token_hex(4)}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps({"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}),
    )
    return conn_id
