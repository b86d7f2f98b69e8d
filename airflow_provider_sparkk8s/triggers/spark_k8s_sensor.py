"""SparkK8sSensorTrigger: the application sensor's whole task in the triggerer (issue 47).

`SparkK8sApplicationSensor(start_from_trigger=True)` hands Airflow 3.3 this trigger's class
and the sensor's parameters as plain JSON; the scheduler defers the task straight to the
triggerer, which renders the templated names (`application_id`, `driver_pod_name`,
`label_selector`, `namespace`) with the task's context and runs `run()`: the sensor's lookup
every `poke_interval` until the driver exists (in a thread, `sensor_run.py`), then the
`SparkK8sApplicationTrigger` of that application on the shared snapshot store (never
deleting it on a kill: the sensor did not submit it), then the task's end
(`application/task/sensor_end.py`, `worker_free_end.py`): the follower's final event as the
XCom, the application's typed failure, or the sensor's timeout, which deletes the driver
with `delete_on_timeout`.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.application.following.timeouts import limit_text
from airflow_provider_sparkk8s.application.task.sensor_end import (
    sensed,
    sensor_deadline,
    sensor_timed_out,
)
from airflow_provider_sparkk8s.application.task.task_end import TaskEnd, Tries, refused, tries_of
from airflow_provider_sparkk8s.errors import SparkK8sError
from airflow_provider_sparkk8s.objects import DRIVER_CONTAINER, EXECUTOR_CONTAINER
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID, DEFAULT_RESYNC_INTERVAL
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from airflow_provider_sparkk8s.triggers.worker_free_end import end_event, render_task_fields
from airflow_provider_sparkk8s.version_compat import (
    BaseTrigger,
    TaskFailedEvent,
    TriggerEvent,
    push_task_xcom,
)

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.triggers.sensor_run import SensorRun

# The lookup and all it imports (the hooks, the pods service), imported in a thread at the
# first run, never on the triggerer's event loop, where Airflow imports this class.
SENSOR_RUN_MODULE = "airflow_provider_sparkk8s.triggers.sensor_run"
# The sensor's templated fields: how it names the application, and where.
TEMPLATED_PARAMETERS = ("application_id", "driver_pod_name", "label_selector", "namespace")


async def _final(follower: SparkK8sApplicationTrigger) -> Mapping[str, Any]:
    final: Mapping[str, Any] = {}
    async for event in follower.run():
        final = event.payload
    return final


def _seconds_left(deadline: datetime | None) -> float | None:
    return None if deadline is None else (deadline - datetime.now(UTC)).total_seconds()


class SparkK8sSensorTrigger(BaseTrigger):
    """Finds, follows and ends one sensor task's application in the triggerer.

    :param application_id, driver_pod_name, label_selector, namespace, kubernetes_conn_id,
        driver_container, executor_container, resync_interval, stream_logs,
        delete_on_timeout, upload_conn_id, poke_interval, timeout, soft_fail: the sensor's.
    :param execution_timeout: the task's, in seconds (None: none).
    :param retry_policy: the task has a retry policy (the provider's rules then decide
        which failures are not retried).
    :param memory_factor: that policy's out-of-memory factor, when it has one.
    """

    # BaseTrigger's __init__ empties the attribute, and the triggerer sets it again from
    # the task's own (those the kwargs name).
    templated: Sequence[str] = TEMPLATED_PARAMETERS

    def __init__(
        self,
        *,
        application_id: str | None = None,
        driver_pod_name: str | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        driver_container: str = DRIVER_CONTAINER,
        executor_container: str = EXECUTOR_CONTAINER,
        resync_interval: float = DEFAULT_RESYNC_INTERVAL,
        stream_logs: bool = False,
        delete_on_timeout: bool = False,
        upload_conn_id: str | None = None,
        poke_interval: float = 60.0,
        timeout: float = 604800.0,
        execution_timeout: float | None = None,
        soft_fail: bool = False,
        retry_policy: bool = False,
        memory_factor: float | None = None,
    ) -> None:
        super().__init__()
        self.template_fields = self.templated
        self.application_id = application_id
        self.driver_pod_name = driver_pod_name
        self.label_selector = label_selector
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.driver_container = driver_container
        self.executor_container = executor_container
        self.resync_interval = resync_interval
        self.stream_logs = stream_logs
        self.delete_on_timeout = delete_on_timeout
        self.upload_conn_id = upload_conn_id
        self.poke_interval = poke_interval
        self.timeout = timeout
        self.execution_timeout = execution_timeout
        self.soft_fail = soft_fail
        self.retry_policy = retry_policy
        self.memory_factor = memory_factor
        self._unrendered: str | None = None  # why a template did not render in the triggerer

    def serialize(self) -> tuple[str, dict[str, Any]]:
        names = (
            *TEMPLATED_PARAMETERS, "kubernetes_conn_id", "driver_container",
            "executor_container", "resync_interval", "stream_logs", "delete_on_timeout",
            "upload_conn_id", "poke_interval", "timeout", "execution_timeout", "soft_fail",
            "retry_policy", "memory_factor",
        )  # fmt: skip
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {name: getattr(self, name) for name in names},
        )

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """A template that does not render ends the task in `run`, naming its parameter."""
        self._unrendered = render_task_fields(self, context, jinja_env)

    # ------------------------------------------------------------------ run

    def _sensor_run(self, runs: Any) -> SensorRun:
        named = runs.Named(self.application_id, self.driver_pod_name, self.label_selector)
        return runs.SensorRun(  # type: ignore[no-any-return]
            self.kubernetes_conn_id, self.namespace, named, self.upload_conn_id, self.log
        )

    def _deadline(self) -> datetime | None:
        """The sensor's timeout from the task's start (`sensor_deadline`), through the
        deadline the triggerer sets on the trigger (`timeout_after`)."""
        after = getattr(self, "timeout_after", None)
        if isinstance(after, datetime) and after.tzinfo is None:
            after = after.replace(tzinfo=UTC)
        now = datetime.now(UTC)
        return sensor_deadline(after, self.timeout, self.execution_timeout, now)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        runs = await asyncio.to_thread(importlib.import_module, SENSOR_RUN_MODULE)
        ti = self.task_instance
        retries = getattr(getattr(ti, "task", None), "retries", None)
        tries = tries_of(getattr(ti, "try_number", 1), retries, getattr(ti, "max_tries", None))
        if self._unrendered is not None:  # invalid input: never retried
            refusal = refused(self._unrendered, may_retry=tries.may_retry)
            yield await end_event(refusal, ti, self.log, self.push_xcom)
            return
        try:
            end = await self._wait(self._sensor_run(runs), tries)
        except SparkK8sError as error:  # the lookup failed, as a poke's would
            self.log.error("Looking for the Spark application failed: %s", error)
            yield TaskFailedEvent()  # retried while tries are left
            return
        yield await end_event(end, ti, self.log, self.push_xcom)

    push_xcom = staticmethod(push_task_xcom)

    async def _wait(self, sensor_run: SensorRun, tries: Tries) -> TaskEnd:
        """Look for the driver until it exists, then follow the application; the sensor's
        timeout ends either wait."""
        deadline = self._deadline()
        what = sensor_run.named.what()
        while True:
            target, namespace = await asyncio.to_thread(sensor_run.look_up)
            app = target.found
            if app is not None:
                break
            left = _seconds_left(deadline)
            if left is not None and left <= 0:
                return await self._timed_out(sensor_run, tries)
            wait = self.poke_interval if left is None else min(self.poke_interval, left)
            self.log.info("No Spark driver found yet for %s; checking again in %gs", what, wait)
            await asyncio.sleep(wait)
        follower = SparkK8sApplicationTrigger(
            application_id=app,
            namespace=namespace,
            kubernetes_conn_id=self.kubernetes_conn_id,
            driver_pod_name=target.driver_pod,
            driver_container=self.driver_container,
            executor_container=self.executor_container,
            resync_interval=self.resync_interval,
            stream_logs=self.stream_logs,
            delete_on_kill=False,  # the sensor did not submit it: not ours to delete
        )
        follower.task_instance = self.task_instance
        try:
            final = await asyncio.wait_for(_final(follower), _seconds_left(deadline))
        except TimeoutError:
            return await self._timed_out(sensor_run, tries)
        return sensed(
            final,
            may_retry=tries.may_retry,
            policy=self.retry_policy,
            memory_factor=self.memory_factor,
        )

    async def _timed_out(self, sensor_run: SensorRun, tries: Tries) -> TaskEnd:
        met = await asyncio.to_thread(sensor_run.timed_out, delete=self.delete_on_timeout)
        limit = limit_text(timedelta(seconds=self.timeout))
        message = f"Sensor timed out (timeout={limit}) in the triggerer; {met}"
        return sensor_timed_out(message, soft_fail=self.soft_fail, may_retry=tries.may_retry)
