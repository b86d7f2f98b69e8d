"""SparkK8sSubmitTrigger: a whole Spark task in the triggerer, with no worker (issue 47).

`SparkK8sSubmitOperator(start_from_trigger=True)` hands Airflow 3.3 this trigger's class and
the task's parameters as plain JSON; the scheduler defers the task straight to the
triggerer, which renders the templated parameters with the task's context and runs `run()`:
the task run's `start` (the operator's own: adopt this task instance's live driver, or
submit, a failed submission removing what it created) in a thread, then the
`SparkK8sApplicationTrigger` of that driver on the shared snapshot store, then the task
run's `finish`, and the task's end (`application/task/task_end.py`). Its kill is that
trigger's kill, with the same fence.

Serialized arguments are the task's parameters; credentials are read from the connections
inside the triggerer, through the hooks.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import fields
from types import ModuleType
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.task.task_end import TaskEnd, refused, tries_of
from airflow_provider_sparkk8s.application.task.task_parameters import (
    TEMPLATED_PARAMETERS,
    Following,
    Uploads,
)
from airflow_provider_sparkk8s.errors import SparkConfError, SparkK8sError
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID, DEFAULT_RESYNC_INTERVAL
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from airflow_provider_sparkk8s.triggers.worker_free_end import (
    end_event,
    render_task_fields,
    worker_template_env,
)
from airflow_provider_sparkk8s.version_compat import (
    BaseTrigger,
    TaskFailedEvent,
    TriggerEvent,
    push_task_xcom,
)

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.triggers.submit_run import SubmitRun

# The blocking phases and all they import (the hooks, the submission, the pods service),
# imported in a thread at the first run or kill, never on the triggerer's event loop, where
# Airflow imports this class (147 modules, 0.27 CPU-seconds).
SUBMIT_RUN_MODULE = "airflow_provider_sparkk8s.triggers.submit_run"


async def _submit_runs() -> ModuleType:
    return await asyncio.to_thread(importlib.import_module, SUBMIT_RUN_MODULE)


# The operator's parameters the trigger takes, flat, under the operator's names (the
# triggerer renders those of them the operator templates): SparkSubmitOperator's, then its own.
SUBMIT_PARAMETERS = tuple(field.name for field in fields(SubmitParameters))
OWN_PARAMETERS = (
    "namespace", "image", "spark_version", "driver_pod_template", "executor_pod_template",
    "event_log_dir",
)  # fmt: skip
TASK_PARAMETERS = SUBMIT_PARAMETERS + OWN_PARAMETERS


class SparkK8sSubmitTrigger(BaseTrigger):
    """Submits, follows and ends one task instance's Spark application in the triggerer.

    :param kubernetes_conn_id: the `spark_k8s` connection, read in the triggerer.
    :param following: the operator's following group (`Following`'s fields).
    :param uploads: its uploads group (`Uploads`' fields).
    :param reporting: its reporting group (`Reporting`'s fields).
    :param memory_factor: the retry policy's out-of-memory factor, when it has one.
    :param resync_interval: seconds between full lists of the shared store.
    :param parameters: the operator's parameters named in `TASK_PARAMETERS`.
    """

    # The operator's templated parameters. BaseTrigger's __init__ empties the attribute, and
    # the triggerer sets it again from the task's own (those the kwargs name).
    templated: Sequence[str] = TEMPLATED_PARAMETERS

    def __init__(
        self,
        *,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        following: Mapping[str, Any] | None = None,
        uploads: Mapping[str, Any] | None = None,
        reporting: Mapping[str, Any] | None = None,
        memory_factor: float | None = None,
        resync_interval: float = DEFAULT_RESYNC_INTERVAL,
        **parameters: Any,
    ) -> None:
        super().__init__()
        self.template_fields = self.templated
        unknown = sorted(set(parameters) - set(TASK_PARAMETERS))
        if unknown:
            raise TypeError(f"SparkK8sSubmitTrigger got unknown parameters {unknown}")
        self.kubernetes_conn_id = kubernetes_conn_id
        self.following = dict(following or {})
        self.uploads = dict(uploads or {})
        self.reporting = dict(reporting or {})
        self.memory_factor = memory_factor
        self.resync_interval = resync_interval
        for name in TASK_PARAMETERS:
            setattr(self, name, parameters.get(name))
        self._context: Any = None  # the task's context, when the triggerer renders
        self._unrendered: str | None = None  # why a template did not render there
        self._starting: asyncio.Future[Any] | None = None  # the submission, once begun
        self._follower: SparkK8sApplicationTrigger | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "following": self.following,
                "uploads": self.uploads,
                "reporting": self.reporting,
                "memory_factor": self.memory_factor,
                "resync_interval": self.resync_interval,
                **self.parameters(),
            },
        )

    def parameters(self) -> dict[str, Any]:
        """The task's parameters as they are now (rendered, once the triggerer has)."""
        return {name: getattr(self, name) for name in TASK_PARAMETERS}

    # ------------------------------------------------------------------ templates

    def render_template(
        self, content: Any, context: Any, jinja_env: Any = None, seen_oids: Any = None
    ) -> Any:
        """A value ending in a template extension (`s3a://b/conf.json`) is a string here:
        the triggerer reads no template files (pod template files are refused)."""
        if isinstance(content, str) and content.endswith(tuple(self.template_ext or ())):
            env = jinja_env or worker_template_env(self.task)
            return self._render(env.from_string(content), context)
        return super().render_template(content, context, jinja_env, seen_oids)

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """A template that does not render ends the task in `run`, naming its parameter."""
        self._context = context  # the task instance's identity, with its DAG run
        self._unrendered = render_task_fields(self, context, jinja_env)

    # ------------------------------------------------------------------ run

    def _submit_run(self, runs: ModuleType) -> SubmitRun:
        return runs.SubmitRun(  # type: ignore[no-any-return]
            self.kubernetes_conn_id,
            self.parameters(),
            self.following,
            self.uploads,
            self.reporting,
            self.memory_factor,
            self.log,
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        runs = await _submit_runs()
        ref = runs.task_ref(self._context, self.task_instance)
        ti = self.task_instance
        retries = getattr(getattr(ti, "task", None), "retries", None)
        tries = tries_of(ref.try_number, retries, getattr(ti, "max_tries", None))
        if self._unrendered is not None:  # invalid input: never retried
            yield await self._event(refused(self._unrendered, may_retry=tries.may_retry))
            return
        submit_run = self._submit_run(runs)
        try:
            started = await self._start(submit_run, ref)
        except SparkConfError as error:  # a rendered value refused: never retried
            yield await self._event(refused(str(error), may_retry=tries.may_retry))
            return
        except SparkK8sError as error:
            self.log.error("The submission failed: %s", error)
            yield TaskFailedEvent()  # retried while tries are left, as infrastructure
            return
        if started.end is not None:  # an earlier try's kept result
            yield await self._event(started.end)
            return
        self._follower = follower = self._follower_of(started.app, ref.try_number)
        final: Mapping[str, Any] = {}
        async for event in follower.run():
            final = event.payload
        end = await asyncio.to_thread(submit_run.finish, started, final, ref, tries)
        yield await self._event(end)

    async def _start(self, submit_run: SubmitRun, ref: Any) -> Any:
        """The task run's start in a thread, shielded: a cancel (a kill, a shutdown) never
        leaves a submission half-known; `on_kill` waits for it."""
        self._starting = asyncio.ensure_future(asyncio.to_thread(submit_run.start, ref))
        return await asyncio.shield(self._starting)

    def _follower_of(self, app: Any, try_number: int) -> SparkK8sApplicationTrigger:
        """The application trigger that follows `app`: the same store, loop and kill."""
        follower = SparkK8sApplicationTrigger.following_application(
            app,
            kubernetes_conn_id=self.kubernetes_conn_id,
            try_number=try_number,
            resync_interval=self.resync_interval,
            **Following(**self.following).trigger_settings(),
            **Uploads(**self.uploads).trigger_settings(),
        )
        follower.task_instance = self.task_instance  # the kill fence reads its state
        return follower

    async def _event(self, end: TaskEnd) -> TriggerEvent:
        return await end_event(end, self.task_instance, self.log, self.push_xcom)

    push_xcom = staticmethod(push_task_xcom)

    # ------------------------------------------------------------------ kill

    async def on_kill(self) -> None:
        """The application trigger's kill (its fence: delete only on a user's kill) of the
        driver this trigger follows; else of the one its submission under way makes, once
        made; else of the task instance's live driver, found by its labels (an earlier
        triggerer's, not yet adopted here)."""
        if self._follower is not None:
            await self._follower.on_kill()
            return
        runs = await _submit_runs()
        try:
            ref = runs.task_ref(self._context, self.task_instance)
        except RuntimeError as error:  # not run by a triggerer: no task instance to kill
            self.log.info("Not deleting anything: %s", error)
            return
        app = await self._driver_to_kill(runs, ref)
        if app is None:
            self.log.info("Not deleting anything: no live driver of this task instance")
            return
        await self._follower_of(app, ref.try_number).on_kill()

    async def _driver_to_kill(self, runs: ModuleType, ref: Any) -> Any:
        if self._starting is None:
            return await asyncio.to_thread(self._submit_run(runs).live_driver, ref)
        try:
            started = await asyncio.shield(self._starting)
        except Exception:  # noqa: BLE001 - a failed submission removed what it made
            return None
        return started.app if started.end is None else None
