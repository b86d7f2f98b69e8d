"""The operator's worker-side wait and the sensor's poke loop, run beside a live application
from a test, so their reports can be compared with the trigger's."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.version_compat import PokeReturnValue
from testenv.harness.waiting import wait_for

_THREADS = ThreadPoolExecutor(thread_name_prefix="test-wait")


class _SignallingDriverPods(DriverPods):
    """The driver-pods service, setting `listed` once its watch has listed."""

    def __init__(self, client: Any, listed: threading.Event) -> None:
        super().__init__(client)
        self.listed = listed

    def follow(self, *args: Any, **kwargs: Any) -> Any:
        for pods in super().follow(*args, **kwargs):
            self.listed.set()
            yield pods


def start_worker_wait(
    monkeypatch: pytest.MonkeyPatch, conn_id: str, app: TrackedApplication
) -> Future[dict[str, Any]]:
    """`deferrable=False`'s wait on `app`, in a thread; returns once its watch has listed, so
    every later change reaches it. The future holds its final event."""
    operator = SparkK8sSubmitOperator(
        task_id="wait_in_worker",
        application="local:///unused.py",
        namespace=app.namespace,
        kubernetes_conn_id=conn_id,
        deferrable=False,
        poll_interval=3,
    )
    listed = threading.Event()
    monkeypatch.setattr(
        operator, "_driver_pods", lambda hook: _SignallingDriverPods(hook.get_client(), listed)
    )
    waited = _THREADS.submit(operator._wait_in_worker, app)
    wait_for(lambda: listed.is_set() or waited.done(), 60, "the worker's watch to list")
    return waited


def start_poking(
    sensor: SparkK8sApplicationSensor, interval: float, timeout: float
) -> Future[dict[str, Any]]:
    """The sensor's poke loop (poke mode), in a thread, after a first poke here that finds
    the application. The future holds the XCom of the poke that ended it."""
    assert sensor.poke({}) is False, "the application ended before the sensor looked"

    def loop() -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            poked = sensor.poke({})
            if isinstance(poked, PokeReturnValue) and poked.is_done:
                return dict(poked.xcom_value or {})
            assert poked is False, poked  # the sensor always answers with its XCom when done
            time.sleep(interval)
        raise AssertionError(f"the sensor saw no end in {timeout}s")

    return _THREADS.submit(loop)
