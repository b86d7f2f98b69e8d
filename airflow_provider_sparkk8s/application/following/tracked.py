"""The driver a task follows, submitted or adopted: plain data that crosses a deferral."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.monitoring.reducer import DRIVER_CONTAINER
from airflow_provider_sparkk8s.records import record


@record
class TrackedApplication:
    application_id: str
    namespace: str
    driver_pod: str
    driver_container: str
    submitted_at: str  # RFC 3339: the driver pod's creation time, the start of the timeouts
    adopted: bool = False
    # The spark-upload-<uuid> folders this submission wrote (removed with the driver).
    uploaded_dirs: tuple[str, ...] = ()
    # The submitted conf's spark.kubernetes.kueue.queueTimeout in seconds (a policy may pin
    # it): a resume in a new process follows with the limit the submission had.
    queue_timeout: float | None = None
    # The Spark line the objects were built for, and whether the submitted conf wrote an
    # event log: decided once by the submission, read back by the report and the run
    # summary. None: no record (a driver found by its labels alone).
    spark_version: str | None = None
    event_log: bool | None = None

    @property
    def submission_id(self) -> str:
        return f"{self.namespace}:{self.driver_pod}"

    def to_kwargs(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_kwargs(kwargs: Mapping[str, Any]) -> TrackedApplication:
        fields = {k: kwargs[k] for k in TrackedApplication.__dataclass_fields__ if k in kwargs}
        fields["uploaded_dirs"] = tuple(fields.get("uploaded_dirs") or ())
        return TrackedApplication(**fields)


def tracked_from_pod(pod: Mapping[str, Any], *, adopted: bool) -> TrackedApplication:
    """The application a driver pod (as the API server returns it) belongs to."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return TrackedApplication(
        application_id=objects.application_id(pod) or "",
        namespace=objects.namespace(pod) or "",
        driver_pod=objects.name(pod) or "",
        # Spark appends its own container after any side-cars of a template.
        driver_container=containers[-1].get("name") or DRIVER_CONTAINER,
        submitted_at=objects.created_at(pod),
        adopted=adopted,
    )
