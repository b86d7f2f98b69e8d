"""The worker-free sensor trigger's blocking phases, run in a thread: the application's
lookup and its timeout's removal, exactly as the sensor runs them in a worker
(`services/following/sensed_application.py`), over connections read in the triggerer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.following.sensed_application import (
    Named,
    Target,
    look_up,
    timed_out,
)

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log


@record
class SensorRun:
    """The sensor's connection, namespace and application, as the trigger holds them."""

    conn_id: str
    namespace: str | None
    named: Named
    upload_conn_id: str | None
    log: Log

    def _hook(self) -> SparkK8sHook:
        return SparkK8sHook(self.conn_id, self.namespace)

    def look_up(self) -> tuple[Target, str]:
        return look_up(self._hook(), self.named)

    def timed_out(self, *, delete: bool) -> str:
        remove = SparkK8sUploadStorageHook(self.upload_conn_id).remove
        return timed_out(
            self._hook(), self.named, delete=delete, remove_uploads=remove, log=self.log
        )
