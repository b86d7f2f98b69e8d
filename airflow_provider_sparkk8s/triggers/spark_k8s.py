"""SparkK8sApplicationTrigger: waits in the triggerer for a Spark application to finish.

Every trigger of a (connection, namespace) subscribes to one shared `SnapshotStore`, so a
thousand deferred applications cost one watch and one list per resync interval, not a
thousand polls. The trigger itself only hands its application's pods to the follower
(`application.following.follower`: the state, the executors that came and went, the timeouts),
streams the driver log, and emits the follower's one final event: the payload the operator's
worker-side wait ends with too.

Serialized arguments are ids, names and settings only. Credentials are read from the
Airflow connection inside the triggerer, through the hook.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_provider_sparkk8s.objects import DRIVER_CONTAINER, EXECUTOR_CONTAINER
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID, DEFAULT_RESYNC_INTERVAL
from airflow_provider_sparkk8s.version_compat import BaseTrigger, TriggerEvent, atask_states

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.application.following.follow_loop import Seen, WaitForLook
    from airflow_provider_sparkk8s.application.following.follower import Following, Step
    from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
    from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
        Measurement,
        MetricsSink,
        Tags,
        look_metrics,
        may_report,
        shared_task_tags,
    )
    from airflow_provider_sparkk8s.application.task.kill_fence import (
        TaskStateRead,
        kill_verdict,
        read_from_answer,
    )
    from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
    from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics
    from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState
    from airflow_provider_sparkk8s.services.following.driver_log import (
        DriverLogFollower,
        DriverLogStream,
    )
    from airflow_provider_sparkk8s.services.following.follow_runs import afollow
    from airflow_provider_sparkk8s.services.following.store import (
        SnapshotStore,
        StoreSettings,
        Subscription,
        shared_store,
    )
    from airflow_provider_sparkk8s.services.pods.async_pods import AsyncPods
    from airflow_provider_sparkk8s.services.submit.driver_removal import adelete_driver

# What following and killing need, loaded in a worker thread at a trigger's first run or
# kill (`load_machinery`), never at import: Airflow's triggerer imports this class on its
# event loop, and these ~70 modules took 0.28 CPU-seconds there (1.7 s of a loaded loop).
# A name a test or benchmark already set on this module is kept.
_MACHINERY: dict[str, tuple[str, ...]] = {
    "airflow_provider_sparkk8s.application.following.follow_loop": ("Seen", "WaitForLook"),
    "airflow_provider_sparkk8s.application.following.follower": ("Following", "Step"),
    "airflow_provider_sparkk8s.application.following.tracked": ("TrackedApplication",),
    "airflow_provider_sparkk8s.application.task.kill_fence": (
        "TaskStateRead",
        "kill_verdict",
        "read_from_answer",
    ),
    "airflow_provider_sparkk8s.application.metrics.provider_metrics": (
        "Measurement",
        "MetricsSink",
        "Tags",
        "look_metrics",
        "may_report",
        "shared_task_tags",
    ),
    "airflow_provider_sparkk8s.application.task.task_identity": ("TaskInstanceRef",),
    "airflow_provider_sparkk8s.hooks.airflow_stats": ("airflow_metrics",),
    "airflow_provider_sparkk8s.monitoring.reducer": ("ApplicationState",),
    "airflow_provider_sparkk8s.services.pods.async_pods": ("AsyncPods",),
    "airflow_provider_sparkk8s.services.following.driver_log": (
        "DriverLogFollower",
        "DriverLogStream",
    ),
    "airflow_provider_sparkk8s.services.submit.driver_removal": ("adelete_driver",),
    "airflow_provider_sparkk8s.services.following.follow_runs": ("afollow",),
    "airflow_provider_sparkk8s.services.following.store": (
        "SnapshotStore",
        "StoreSettings",
        "Subscription",
        "shared_store",
    ),
}
_machinery_lock = threading.Lock()
_machinery_ready = threading.Event()


def load_machinery() -> None:
    """Import what following and killing need into this module (idempotent, thread-safe)."""
    with _machinery_lock:
        if _machinery_ready.is_set():
            return
        namespace = globals()
        for module_name, names in _MACHINERY.items():
            module = importlib.import_module(module_name)
            for name in names:
                namespace.setdefault(name, getattr(module, name))
        _machinery_ready.set()


async def _machinery() -> None:
    """`load_machinery` off the event loop: an import in a thread lets the loop run."""
    if not _machinery_ready.is_set():
        await asyncio.to_thread(load_machinery)


# Closes of clients nobody waited for, and kills whose on_kill was cancelled: kept until done.
_closing: set[asyncio.Future] = set()


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


_S = TypeVar("_S", str, str | None)


def _interned(value: _S) -> _S:
    return value if value is None else sys.intern(value)


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
    :param queue_timeout: seconds Kueue may keep the driver queued
        (`spark.kubernetes.kueue.queueTimeout`; None: no limit). Time queued does not count
        against `startup_timeout`, which starts at the admission.
    :param start_time: when the application was submitted (epoch seconds or ISO 8601);
        the timeouts count from it, so a restarted triggerer keeps the deadlines.
    :param resync_interval: seconds between full lists of the shared store.
    :param stream_logs: copy the driver log into the task log while deferred.
    :param log_interval: seconds between two driver log polls.
    :param delete_on_kill: delete the driver pod when a user kills the task, and the files
        its submission uploaded (found in its spark.properties).
    :param upload_conn_id: the upload storage's connection (the operator's), for that removal.
    :param keep_uploaded_files: keep the uploaded files when the kill deletes the driver.
    :param try_number: the try that deferred; its kill spares a driver a newer try adopted
        (a clear while deferred). None (a trigger serialized before it was passed): the kill
        deletes whatever try owns the pod.
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
        queue_timeout: float | None = None,
        start_time: float | str | None = None,
        resync_interval: float = DEFAULT_RESYNC_INTERVAL,
        stream_logs: bool = True,
        log_interval: float = 10.0,
        delete_on_kill: bool = True,
        upload_conn_id: str | None = None,
        keep_uploaded_files: bool = False,
        try_number: int | None = None,
    ):
        super().__init__()
        # Interned: the triggerer decodes each trigger's kwargs on its own, so otherwise every
        # trigger holds its own copies of strings most share (namespace, connection,
        # containers), and its id and driver name beside the store's copies in its pods.
        self.application_id = _interned(application_id)
        self.namespace = _interned(namespace)
        self.kubernetes_conn_id = _interned(kubernetes_conn_id)
        self.driver_pod_name = _interned(driver_pod_name)
        self.driver_container = _interned(driver_container)
        self.executor_container = _interned(executor_container)
        self.startup_timeout = startup_timeout
        self.run_timeout = run_timeout
        self.queue_timeout = queue_timeout
        self.start_time = _epoch(start_time)
        self.resync_interval = resync_interval
        self.stream_logs = stream_logs
        self.log_interval = log_interval
        self.delete_on_kill = delete_on_kill
        self.upload_conn_id = upload_conn_id
        self.keep_uploaded_files = keep_uploaded_files
        self.try_number = try_number
        self._following: Following | None = None  # while running: the follower's memory
        self._task_tags: Tags | None = None  # the metrics' tags, once the task is known

    @classmethod
    def following_application(
        cls, app: TrackedApplication, **settings: Any
    ) -> SparkK8sApplicationTrigger:
        """The trigger of a task's driver, submitted or adopted (the operator's deferral,
        the worker-free trigger's follow), with the task's `settings`: its kill deletes the
        driver, behind the fence."""
        return cls(
            application_id=app.application_id,
            namespace=app.namespace,
            driver_pod_name=app.driver_pod,
            driver_container=app.driver_container,
            queue_timeout=app.queue_timeout,
            start_time=app.submitted_at,
            delete_on_kill=True,
            **settings,
        )

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
                "queue_timeout": self.queue_timeout,
                "start_time": self.start_time,
                "resync_interval": self.resync_interval,
                "stream_logs": self.stream_logs,
                "log_interval": self.log_interval,
                "delete_on_kill": self.delete_on_kill,
                "upload_conn_id": self.upload_conn_id,
                "keep_uploaded_files": self.keep_uploaded_files,
                "try_number": self.try_number,
            },
        )

    @property
    def last_state(self) -> ApplicationState | None:
        """The state last read from the application's pods (None before the first look)."""
        return None if self._following is None else self._following.state

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

        return await SparkK8sHook(self.kubernetes_conn_id, self.namespace).get_async_client()

    def _store_settings(self) -> StoreSettings:
        return _store_settings(self.resync_interval)

    # ------------------------------------------------------------------ run

    def _metrics(self) -> MetricsSink:
        return airflow_metrics()

    def _metric_tags(self) -> Tags:
        """namespace, dag_id, task_id: the triggerer sets `task_instance` on each trigger it
        runs (none in a bare event loop). Kept once the task is known (a reference to the
        task's shared tags), so a look's metrics read one attribute for them."""
        tags = self._task_tags
        if tags is not None:
            return tags
        ti = self.task_instance
        tags = shared_task_tags(
            self.namespace, getattr(ti, "dag_id", None), getattr(ti, "task_id", None)
        )
        if ti is not None:
            self._task_tags = tags
        return tags

    async def run(self) -> AsyncIterator[TriggerEvent]:
        await _machinery()
        async with shared_store(
            self.kubernetes_conn_id,
            self.namespace,
            self._client,
            self._store_settings(),
            self._metrics(),
        ) as store:
            final = await self._follow(store)
        yield TriggerEvent(final)

    async def _follow(self, store: SnapshotStore) -> dict[str, Any]:
        """The final event: the follow loop's (`afollow`), from the store's updates and the
        clock.

        The trigger is its own `Followed` (the same attribute names), and only the follower's
        memory lives across a wait: at thousands of waiting triggers, every object counts."""
        subscription = store.subscribe(self.application_id)
        self._following = Following(self)  # a new follow, also after a re-run
        service = AsyncPods(store.client)
        logs = self._log_stream(service) if self.stream_logs else None

        async def next_look(wait: WaitForLook) -> Seen | None:
            self._following = wait.following
            pods = await subscription.next(wait.seconds_left(time.time()))
            # None: a deadline passed, or a Workload read is due.
            return None if pods is None else (pods, subscription.ended())

        async def on_look(before: ApplicationState | None, step: Step) -> None:
            await self._look(subscription, before, step, logs)

        try:
            step = await afollow(
                self._following,
                next_look,
                read_queue=service.queue_view,
                on_look=on_look,
                on_transition=self._say,
            )
        finally:
            store.unsubscribe(subscription)
            if logs is not None:
                logs.cancel()
        self._following = step.following
        assert step.final is not None  # the loop returns the step that ends
        return step.final

    def _say(self, state: ApplicationState) -> None:
        self.log.info("Spark application %s: %s", self.application_id, state.describe())

    async def _look(
        self,
        subscription: Subscription,
        before: ApplicationState | None,
        step: Step,
        logs: DriverLogStream | None,
    ) -> None:
        """One update of the application's pods: stream the driver log, send its metrics."""
        self._following = step.following
        state = step.following.state
        subscription.state = None if state is None else state.state
        metrics = self._metrics()
        if metrics.enabled:
            self._report(metrics, before, step)
        if logs is not None and state is not None:
            logs.saw(state)
            if step.final is not None:
                # The driver's last lines first: the final state reads as the log's end.
                await logs.finish(state)

    def _report(self, metrics: MetricsSink, before: ApplicationState | None, step: Step) -> None:
        """Hand the sink the looks that can report (most cannot), to derive at its flush."""
        if may_report(before, step):
            metrics.defer(functools.partial(self._look_measurements, before, step))

    def _look_measurements(
        self, before: ApplicationState | None, step: Step
    ) -> tuple[tuple[Measurement, ...], Tags] | None:
        """What the look reports, with the task's tags: the sink sends them."""
        measured = look_metrics(before, step, self.driver_container)
        return (measured, self._metric_tags()) if measured else None

    def _log_stream(self, pods: AsyncPods) -> DriverLogStream:
        # From the submission on: a follower that restarts re-reads at most this run's log.
        since = datetime.fromtimestamp(self.start_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        def follower_for(driver_pod: str) -> DriverLogFollower:
            log = self.log  # one logger for the follower's life, not one per line
            return DriverLogFollower(
                functools.partial(pods.log_text, self.namespace, driver_pod),
                lambda line: log.info("[driver] %s", line),
                self.driver_container,
                since,
            )

        return DriverLogStream(follower_for, self.log_interval)

    # ------------------------------------------------------------------ kill

    async def on_kill(self) -> None:
        """The user killed the task (mark failed or success, clear, its run deleted): delete
        the driver pod (Spark then removes executors) and the files it uploaded.

        Airflow 3.3 also calls this when the trigger merely moved to another triggerer, so
        the kill first reads the task instance's state (`application.task.kill_fence`) and
        spares the driver unless that state proves a user's kill; a newer try that adopted
        the driver (a clear while deferred) spares it too (`ownership`).

        The kill runs in a task of its own, awaited through a shield: Airflow 3.3's
        triggerer sends the cancel again on every sync until the trigger has finished, and
        each one lands in a running `on_kill`; unshielded, a kill slower than one sync
        (reading the connection on a busy triggerer) stopped before its delete."""
        if not self.delete_on_kill or not self.driver_pod_name:
            self.log.info("Not deleting the driver pod (delete_on_kill=%s)", self.delete_on_kill)
            return
        killing = asyncio.ensure_future(self._kill(self.driver_pod_name))
        _closing.add(killing)
        killing.add_done_callback(_closing.discard)
        await asyncio.shield(killing)

    async def _kill(self, driver_pod_name: str) -> None:
        await _machinery()
        log = self.log  # one logger for the whole kill: the property makes one per use
        read = await self._task_state()
        client = await self._client()
        try:
            pods = AsyncPods(client)
            pod = await pods.get(self.namespace, driver_pod_name)
            spared = kill_verdict(read, pod, self.try_number)
            if spared is not None:
                log.info(
                    "Not deleting driver pod %s/%s: %s", self.namespace, driver_pod_name, spared
                )
                return
            log.info("The task instance is %s: deleting its driver", read.describe())
            await adelete_driver(
                pods,
                self.namespace,
                driver_pod_name,
                remove_uploads=self._remove_uploads,
                log=log,
                keep_uploads=self.keep_uploaded_files,
                kill_of_try=self.try_number,
            )
        finally:
            await client.aclose()

    async def _task_state(self) -> TaskStateRead:
        """The task instance's state as Airflow holds it now (the triggerer sets
        `task_instance` on each trigger it runs; none: not run by a triggerer)."""
        ti = self.task_instance
        if ti is None:
            return TaskStateRead.unreadable("no task instance: not run by a triggerer")
        ref = TaskInstanceRef(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1))
        try:
            answer = await atask_states(ref.dag_id, ref.run_id, ref.task_id, ref.map_index)
        except Exception as error:  # noqa: BLE001 - whatever failed, no kill is proven
            return TaskStateRead.unreadable(f"{type(error).__name__}: {error}")
        return read_from_answer(answer, ref)

    async def _remove_uploads(
        self, directories: Sequence[str], spark_conf: Mapping[str, str]
    ) -> list[str]:
        """The upload storage hook's removal, off the event loop (fsspec and a connection
        read block)."""
        from asgiref.sync import sync_to_async

        from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook

        hook = SparkK8sUploadStorageHook(self.upload_conn_id)
        return await sync_to_async(hook.remove)(directories, spark_conf)
