"""The application a sensor waits for: found as the DAG names it, and what its timeout met.

One home for the sensor's lookup and its timeout's removal, whichever process runs them:
the sensor in a worker (poke, deferrable, a deferral's timeout) and its worker-free trigger
in the triggerer (`triggers/spark_k8s_sensor.py`, in a thread). The hook is the caller's
(the sync client and the namespace of a `spark_k8s` connection); it is closed before return.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.following.timeouts import ran_for
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods, application_selector
from airflow_provider_sparkk8s.services.submit.driver_removal import RemoveUploads, delete_driver

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log


class SyncHook(Protocol):
    def get_client(self) -> Any: ...
    def get_namespace(self) -> str: ...
    def close(self) -> None: ...


@record
class Target:
    """The application the sensor found: its id, driver pod and all its pods."""

    application_id: str | None
    driver_pod: str | None
    pods: tuple[Pod, ...]

    @property
    def found(self) -> str | None:
        """The application's id once its driver exists (None before: the application may
        not be submitted yet)."""
        return self.application_id if has_driver(self.pods) else None


@record
class Named:
    """How the DAG names the application: exactly one of the three (the sensor checks)."""

    application_id: str | None = None
    driver_pod_name: str | None = None
    label_selector: str | None = None

    def what(self) -> str:
        if self.application_id:
            return f"application {self.application_id}"
        if self.driver_pod_name:
            return f"driver pod {self.driver_pod_name}"
        return f"label selector {self.label_selector!r}"

    def find(self, pods: DriverPods, namespace: str) -> Target:
        """The application's pods, however it was named (one or two requests)."""
        if self.application_id:
            found = pods.list_pods(namespace, application_selector(self.application_id))
            return Target(self.application_id, self.driver_pod_name, tuple(found))
        if self.label_selector:
            driver = objects.newest_driver(pods.list_pods(namespace, self.label_selector))
        else:
            driver = pods.get(namespace, str(self.driver_pod_name))
        if driver is None:
            return Target(None, self.driver_pod_name, ())
        app = objects.application_id(driver)
        found = pods.list_pods(namespace, application_selector(app)) if app else [driver]
        return Target(app, objects.name(driver), tuple(found))


def has_driver(pods: Sequence[Pod]) -> bool:
    return any(objects.spark_role(p) == "driver" for p in pods)


def look_up(hook: SyncHook, named: Named) -> tuple[Target, str]:
    """The application and its namespace, through `hook`."""
    try:
        namespace = hook.get_namespace()
        return named.find(DriverPods(hook.get_client()), namespace), namespace
    finally:
        hook.close()


def timed_out(
    hook: SyncHook, named: Named, *, delete: bool, remove_uploads: RemoveUploads, log: Log
) -> str:
    """What the timeout met, for its message: the driver and how long it ran, and, with
    `delete` (the sensor's `delete_on_timeout`), its deletion with its uploads."""
    try:
        namespace = hook.get_namespace()
        pods = DriverPods(hook.get_client())
        target = named.find(pods, namespace)
        driver = next((p for p in target.pods if objects.spark_role(p) == "driver"), None)
        if driver is None:
            return f"no Spark driver found for {named.what()}"
        name = str(objects.name(driver))
        ran = ran_for(objects.created_at(driver), datetime.now(UTC))
        described = f"driver pod {namespace}:{name} of {named.what()} ran for {ran}"
        if not delete:
            return described + " and is left running (delete_on_timeout=False)"
        delete_driver(
            pods, namespace, name, remove_uploads=remove_uploads, log=log, why="sensor timed out"
        )
        return described + " and was deleted"
    finally:
        hook.close()
