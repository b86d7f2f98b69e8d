"""SparkK8sApplicationTrigger: waits in the triggerer for a Spark application to finish.

Every trigger of a (connection, namespace) subscribes to one shared `SnapshotStore`, so a
thousand deferred applications cost one watch and one list per resync interval, not a
thousand polls. The trigger itself only reduces its application's pods to a state
(`monitoring.reducer`), enforces the timeouts, streams the driver log, and emits exactly one
final event.

The final event's payload is `application.events.final_event`'s: the same payload the
operator's worker-side wait ends with.

Serialized arguments are ids, names and settings only. Credentials are read from the
Airflow connection inside the triggerer, through the hook.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from airflow_provider_sparkk8s.application.events import final_event
from airflow_provider_sparkk8s.application.timeouts import seconds_to_next_deadline, timed_out
from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.paths import resource_path
from airflow_provider_sparkk8s.monitoring.reducer import (
    DRIVER_CONTAINER,
    EXECUTOR_CONTAINER,
    ApplicationState,
    Pod,
    driver_has_ended,
    reduce_application,
    remember_executors,
    with_ended_driver,
)
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services.driver_log import DriverLogFollower
from airflow_provider_sparkk8s.services.store import (
    DEFAULT_RESYNC_INTERVAL,
    SnapshotStore,
    StoreSettings,
    shared_store,
)
from airflow_provider_sparkk8s.version_compat import BaseTrigger, TriggerEvent

FINAL_LOG_WAIT = 5.0  # seconds
_closing: set[asyncio.Task] = set()  # closes of clients nobody waited for, kept until done


def _close_when_built(building: asyncio.Future) -> None:
    """A client finished building after its trigger was cancelled: close it."""
    if building.cancelled() or building.exception() is not None:
        return
    closing = asyncio.ensure_future(building.result().aclose())
    _closing.add(closing)
    closing.add_done_callback(_closing.discard)


@functools.lru_cache(maxsize=16)
def _store_settings(resync_interval: float) -> StoreSettings:
    """One settings object per interval, not one per deferred task (frozen, so shared)."""
    return StoreSettings(resync_interval=resync_interval)


def _epoch(value: float | str | datetime | None) -> float:
    if value is None:
        return time.time()
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value).timestamp()
    return float(value)


class SparkK8sApplicationTrigger(BaseTrigger):
    """Fires once, when the application succeeds, fails, vanishes or times out.

    :param application_id: the `spark-app-selector` label value (`spark-...`).
    :param namespace: where the driver runs.
    :param kubernetes_conn_id: the `spark_k8s` connection, read through the hook in the triggerer.
    :param driver_pod_name: pins the driver pod (else the newest pod with `spark-role=driver`).
    :param driver_container: the driver container's name (a template's container name).
    :param startup_timeout: seconds the driver may stay submitted/pending (None: no limit).
    :param run_timeout: seconds the whole application may take (None: no limit).
    :param start_time: when the application was submitted (epoch seconds or ISO 8601);
        both timeouts count from it, so a restarted triggerer keeps the deadlines.
    :param resync_interval: seconds between full lists of the shared store.
    :param stream_logs: copy the driver log into the task log while deferred.
    :param log_interval: seconds between two driver log polls.
    :param delete_on_kill: delete the driver pod when a user kills the task.
    """

    def __init__(
        self,
        *,
        application_id: str,
        namespace: str,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        driver_pod_name: str | None = None,
        driver_container: str = DRIVER_CONTAINER,
        executor_container: str = EXECUTOR_CONTAINER,
        startup_timeout: float | None = None,
        run_timeout: float | None = None,
        start_time: float | str | None = None,
        resync_interval: float = DEFAULT_RESYNC_INTERVAL,
        stream_logs: bool = True,
        log_interval: float = 10.0,
        delete_on_kill: bool = True,
    ):
        super().__init__()
        self.application_id = application_id
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.driver_pod_name = driver_pod_name
        self.driver_container = driver_container
        self.executor_container = executor_container
        self.startup_timeout = startup_timeout
        self.run_timeout = run_timeout
        self.start_time = _epoch(start_time)
        self.resync_interval = resync_interval
        self.stream_logs = stream_logs
        self.log_interval = log_interval
        self.delete_on_kill = delete_on_kill
        self.last_state: ApplicationState | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "application_id": self.application_id,
                "namespace": self.namespace,
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "driver_pod_name": self.driver_pod_name,
                "driver_container": self.driver_container,
                "executor_container": self.executor_container,
                "startup_timeout": self.startup_timeout,
                "run_timeout": self.run_timeout,
                "start_time": self.start_time,
                "resync_interval": self.resync_interval,
                "stream_logs": self.stream_logs,
                "log_interval": self.log_interval,
                "delete_on_kill": self.delete_on_kill,
            },
        )

    @property
    def log(self) -> Any:
        """Airflow's logger for this trigger, made when a line is logged and not kept.

        Airflow's LoggingMixin keeps one logger per instance (about 1 KiB with structlog) for
        the trigger's whole life, though a trigger logs a few lines: at 10,000 deferred
        applications that is 10 MB. The line still reaches its task's log: the triggerer
        routes by the trigger id it binds in each trigger's context, not by the logger.
        """
        logger = super().log
        vars(self).pop("_log", None)  # LoggingMixin's per-instance cache
        return logger

    # ------------------------------------------------------------------ the client

    async def _client(self) -> Any:
        """An AsyncKubeClient from the connection, built here in the triggerer.

        Built in a task of its own and awaited through a shield: reading the connection hops
        to a thread (asgiref), and a cancel landing there would lose its message, which
        Airflow reads to tell a user's mark-failed (on_kill must run) from a shutdown.
        """
        building = asyncio.ensure_future(self._build_client())
        try:
            return await asyncio.shield(building)
        except asyncio.CancelledError:
            building.add_done_callback(_close_when_built)
            raise

    async def _build_client(self) -> Any:
        from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook

        client: Any = SparkK8sHook(self.kubernetes_conn_id, self.namespace).get_async_client()
        if asyncio.iscoroutine(client):
            client = await client
        return client

    def _store_settings(self) -> StoreSettings:
        return _store_settings(self.resync_interval)

    # ------------------------------------------------------------------ run

    async def run(self) -> AsyncIterator[TriggerEvent]:
        async with shared_store(
            self.kubernetes_conn_id, self.namespace, self._client, self._store_settings()
        ) as store:
            final = await self._follow(store)
        yield TriggerEvent(self._payload(final))

    async def _follow(self, store: SnapshotStore) -> ApplicationState:
        subscription = store.subscribe(self.application_id)
        log_task: asyncio.Task | None = None
        follower: DriverLogFollower | None = None
        seen: dict[str, Any] = {}  # executors that came and went (`remember_executors`)
        driver_end: Pod | None = None  # the driver's ended version (`with_ended_driver`)
        try:
            while True:
                failure = timed_out(
                    self.last_state,
                    time.time(),
                    self.start_time,
                    self.startup_timeout,
                    self.run_timeout,
                )
                if failure is not None:
                    return failure
                pods = await subscription.next(self._seconds_to_next_deadline())
                if pods is None:
                    continue  # a deadline passed: checked at the top
                ended = subscription.ended()
                seen = remember_executors(seen, [*ended, *pods])
                driver_end = next((p for p in ended if driver_has_ended(p)), driver_end)
                state = reduce_application(
                    with_ended_driver(pods, driver_end),
                    driver_pod_name=self.driver_pod_name,
                    driver_container=self.driver_container,
                    executor_container=self.executor_container,
                    seen_executors=seen,
                )
                self._log_transition(state)
                self.last_state = state
                if (
                    self.stream_logs
                    and follower is None
                    and state.state == "running"
                    and state.driver_pod
                ):
                    follower = self._log_follower(store, state.driver_pod)
                    log_task = asyncio.create_task(follower.run(self.log_interval))
                if state.terminal:
                    if log_task is not None:
                        log_task.cancel()
                        await asyncio.gather(log_task, return_exceptions=True)
                        log_task = None
                    if self.stream_logs and state.driver_pod and state.state != "unknown":
                        follower = follower or self._log_follower(store, state.driver_pod)
                        # The last lines before the result, but never hold the result back long.
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(FINAL_LOG_WAIT):
                                await follower.poll()
                    return state
        finally:
            store.unsubscribe(subscription)
            if log_task is not None:
                log_task.cancel()

    def _seconds_to_next_deadline(self) -> float | None:
        return seconds_to_next_deadline(
            self.last_state, time.time(), self.start_time, self.startup_timeout, self.run_timeout
        )

    def _log_transition(self, state: ApplicationState) -> None:
        previous = self.last_state
        if previous is None or (previous.state, previous.reason) != (state.state, state.reason):
            self.log.info("Spark application %s: %s", self.application_id, state.describe())

    def _log_follower(self, store: SnapshotStore, driver_pod: str) -> DriverLogFollower:
        path = resource_path("v1", "Pod", self.namespace, driver_pod, "log")

        async def fetch(params: Any) -> str:
            return await store.client.text(path, params)

        # From the submission on: a follower that restarts re-reads at most this run's log.
        since = datetime.fromtimestamp(self.start_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        log = self.log  # one logger for the follower's life, not one per line
        return DriverLogFollower(
            fetch, lambda line: log.info("[driver] %s", line), self.driver_container, since
        )

    def _payload(self, state: ApplicationState) -> dict[str, Any]:
        """The operator's payload shape; a vanished driver becomes DriverPodNotFound there."""
        driver = state.driver_pod or self.driver_pod_name or "(spark-role=driver)"
        return final_event(self.application_id, self.namespace, driver, state)

    # ------------------------------------------------------------------ kill

    async def on_kill(self) -> None:
        """The user killed the task: delete the driver pod (Spark then removes executors)."""
        if not self.delete_on_kill or not self.driver_pod_name:
            self.log.info("Not deleting the driver pod (delete_on_kill=%s)", self.delete_on_kill)
            return
        path = resource_path("v1", "Pod", self.namespace, self.driver_pod_name)
        client = await self._client()
        try:
            await client.request("DELETE", path)
            self.log.info("Deleted driver pod %s/%s", self.namespace, self.driver_pod_name)
        except KubeApiError as error:
            if error.status != 404:
                raise
            self.log.info("Driver pod %s/%s was already gone", self.namespace, self.driver_pod_name)
        finally:
            await client.aclose()
