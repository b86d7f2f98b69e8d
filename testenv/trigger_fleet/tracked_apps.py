"""Many held Spark drivers on the test control plane, and triggers following them all."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from testenv.harness.kube import request
from testenv.harness.pods import EXIT_CODE, HOLD, RUN_MS, create, new_app_id, spark_pod


@dataclass
class TrackedApp:
    app_id: str
    driver: str
    exit_code: int
    trigger: SparkK8sApplicationTrigger | None = None
    payload: dict[str, Any] | None = None
    finished_at: float | None = None


@dataclass
class Fleet:
    namespace: str
    apps: list[TrackedApp]
    tasks: list[asyncio.Task] = field(default_factory=list)

    def payloads(self) -> list[dict[str, Any] | None]:
        return [app.payload for app in self.apps]


def create_held_apps(
    api: ApiClient, namespace: str, count: int, prefix: str = "app"
) -> list[TrackedApp]:
    """`count` drivers that KWOK runs and holds Running; every third one will fail with 3."""
    apps = []
    for index in range(count):
        app = TrackedApp(new_app_id(), f"{prefix}-{index}-driver", 3 if index % 3 == 0 else 0)
        create(api, namespace, spark_pod(app.driver, app.app_id, annotations={HOLD: "true"}))
        apps.append(app)
    return apps


def all_running(api: ApiClient, namespace: str, count: int) -> bool:
    response = request(
        api,
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        params={"labelSelector": "spark-role=driver"},
    )
    phases = [item.get("status", {}).get("phase") for item in response.get("items", [])]
    return len(phases) == count and all(p == "Running" for p in phases)


def release(api: ApiClient, namespace: str, app: TrackedApp) -> None:
    """Lets KWOK end the driver: Succeeded, or Failed with the app's exit code."""
    annotations = {HOLD: "false", RUN_MS: "100", EXIT_CODE: str(app.exit_code)}
    request(
        api,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{app.driver}",
        {"metadata": {"annotations": annotations}},
        "application/merge-patch+json",
    )


def start_triggers(fleet: Fleet, conn_id: str, **settings: Any) -> None:
    async def follow(app: TrackedApp) -> None:
        assert app.trigger is not None
        async for event in app.trigger.run():
            assert app.payload is None, "a second event"
            app.payload = event.payload
            app.finished_at = time.monotonic()

    for app in fleet.apps:
        app.trigger = SparkK8sApplicationTrigger(
            application_id=app.app_id,
            namespace=fleet.namespace,
            kubernetes_conn_id=conn_id,
            driver_pod_name=app.driver,
            stream_logs=False,
            **settings,
        )
        fleet.tasks.append(asyncio.create_task(follow(app)))


def all_seen_running(fleet: Fleet) -> bool:
    return all(
        a.trigger and a.trigger.last_state and a.trigger.last_state.state == "running"
        for a in fleet.apps
    )


def assert_every_completion_reported(fleet: Fleet) -> None:
    wrong = []
    for app in fleet.apps:
        payload = app.payload or {}
        expected = ("success", 0) if app.exit_code == 0 else ("failed", app.exit_code)
        if (payload.get("status"), payload.get("exit_code")) != expected:
            wrong.append((app.driver, expected, payload.get("status"), payload.get("reason")))
    assert not wrong, f"{len(wrong)} of {len(fleet.apps)} wrong: {wrong[:5]}"
