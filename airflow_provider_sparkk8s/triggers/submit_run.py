"""The worker-free trigger's two blocking phases, run in a thread: the task run's `start`
and `finish`, exactly as the operator calls them, over connections read in the triggerer.

What the operator decides from Airflow's context is decided here from the connection and
`[sparkk8s]` alone: the event log and the platform policy as the operator reads them; the
Spark UI is not routed through Airflow (no XCom reaches the UI while the task runs) and
OpenLineage's keys are not injected (the operator refuses asking for them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.application.following.cost import cost_line
from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
from airflow_provider_sparkk8s.application.task.resume import Follow
from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.task.submission_plan import namespace_of
from airflow_provider_sparkk8s.application.task.task_end import (
    APPLICATION_XCOM_KEY,
    RETURN_VALUE_KEY,
    TaskEnd,
    Tries,
    ended,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.task.task_parameters import Following, Uploads
from airflow_provider_sparkk8s.application.task.worker_free import check_worker_free
from airflow_provider_sparkk8s.application.ui import event_log, run_summary
from airflow_provider_sparkk8s.environment import hidden
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics
from airflow_provider_sparkk8s.hooks.spark_k8s import (
    SparkK8sHook,
    configured_policy,
    connection_extras,
    policy_from_connection,
)
from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.task.task_prepare import ConfAdditions, RunRequest
from airflow_provider_sparkk8s.services.task.task_run import KeptResult, TaskRun
from airflow_provider_sparkk8s.services.ui.history_server import read_summary
from airflow_provider_sparkk8s.version_compat import conf as airflow_conf

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log

CONFIG_SECTION = "sparkk8s"
HISTORY_SERVER_URL_OPTION = "history_server_url"


def task_ref(context: Mapping[str, Any] | None, ti: Any) -> TaskInstanceRef:
    """The task instance's identity: from the context the triggerer rendered with (it has
    the DAG run's clear count), else from the task instance alone."""
    if context is not None:
        return TaskInstanceRef.from_context(context)
    if ti is None:
        raise RuntimeError("SparkK8sSubmitTrigger runs for a task instance (none was given)")
    return TaskInstanceRef.from_context({"ti": ti})


@record
class Started:
    """The driver to follow (and the XCom's `driver_memory`), or the task's end already:
    an earlier try's kept result."""

    app: TrackedApplication
    driver_memory: dict[str, Any]
    end: TaskEnd | None = None


@record
class SubmitRun:
    """The task's parameters and groups, as the trigger holds them (plain data)."""

    conn_id: str
    parameters: Mapping[str, Any]
    following: Mapping[str, Any]
    uploads: Mapping[str, Any]
    reporting: Mapping[str, Any]
    memory_factor: float | None
    log: Log

    def _task_run(self, pods: DriverPods) -> TaskRun:
        uploads = Uploads(**self.uploads)
        storage = SparkK8sUploadStorageHook(uploads.upload_conn_id)
        return TaskRun(
            pods,
            Following(**self.following),
            uploads,
            uploads_conf=self.parameters.get("conf") or {},
            storage_for=storage.storage,
            remove_uploads=storage.remove,
            log=self.log,
            metrics=airflow_metrics(),
            memory_factor=self.memory_factor,
            keep_results=False,
        )

    def _extras(self, hook: SparkK8sHook) -> tuple[dict[str, Any], dict[str, Any]]:
        extra = dict(hook.get_connection(self.conn_id).extra_dejson)
        return extra, connection_extras(extra)

    def start(self, ref: TaskInstanceRef) -> Started:
        """The rendered parameters checked again, then the operator's `start`."""
        check_worker_free(self.parameters)
        hook = SparkK8sHook(kubernetes_conn_id=self.conn_id)
        extra, extras = self._extras(hook)
        conf = dict(self.parameters.get("conf") or {})
        namespace = namespace_of(self.parameters.get("namespace"), conf) or hook.get_namespace()
        policy = policy_from_connection(self.conn_id, extra, configured_policy())
        with DriverPods(hook.get_client(), owns_client=True) as pods:
            master = "k8s://" + pods.client.settings.server
            request = self._request(conf, extras, master, namespace, policy)
            started = self._task_run(pods).start(request, ref)
        if isinstance(started, KeptResult):
            kept = started.kept
            xcoms = {RETURN_VALUE_KEY: kept.returned, APPLICATION_XCOM_KEY: kept.application}
            self.log.info("Delivering the result of try %d, kept undelivered", kept.try_number)
            return Started(
                TrackedApplication.from_kwargs(kept.application), {}, TaskEnd(True, xcoms)
            )
        return Started(started.app, started.driver_memory)

    def _request(
        self,
        conf: dict[str, Any],
        extras: Mapping[str, Any],
        master: str,
        namespace: str,
        policy: Policy | None,
    ) -> RunRequest:
        """The rendered parameters as the task run takes them, with the event log the
        connection or `[sparkk8s]` ask for."""
        given: dict[str, Any] = {
            field.name: self.parameters.get(field.name) for field in fields(SubmitParameters)
        }
        config = {
            option: airflow_conf.get(CONFIG_SECTION, option, fallback=None)
            for option in (event_log.DIR_OPTION, event_log.ROLLING_OPTION)
        }
        rolling = self.reporting.get("event_log_rolling_max_file_size")
        chosen = event_log.choose(self.parameters.get("event_log_dir"), rolling, extras, config)
        return RunRequest(
            parameters=replace(
                SubmitParameters(**given), conf=conf, verbose=bool(given["verbose"])
            ),
            master=master,
            namespace=namespace,
            cwd=os.getcwd(),  # no relative local path passes `check_worker_free`
            environ=hidden(os.environ),
            image=self.parameters.get("image"),
            spark_version=self.parameters.get("spark_version"),
            driver_pod_template=self.parameters.get("driver_pod_template"),
            executor_pod_template=self.parameters.get("executor_pod_template"),
            policy=policy,
            additions=ConfAdditions(chosen, None),
        )

    def live_driver(self, ref: TaskInstanceRef) -> TrackedApplication | None:
        """This task instance's live driver, by its labels (a kill that reaches a trigger
        before it adopted the driver an earlier triggerer submitted); None: none lives."""
        hook = SparkK8sHook(kubernetes_conn_id=self.conn_id)
        conf = dict(self.parameters.get("conf") or {})
        with DriverPods(hook.get_client(), owns_client=True) as pods:
            try:
                decision = self._task_run(pods).resume(
                    None,
                    ref,
                    lambda: (
                        namespace_of(self.parameters.get("namespace"), conf) or hook.get_namespace()
                    ),
                )
            except ApplicationFailed:  # no driver of this task instance
                return None
        return decision.app if isinstance(decision, Follow) else None

    def finish(
        self, started: Started, final: Mapping[str, Any], ref: TaskInstanceRef, tries: Tries
    ) -> TaskEnd:
        """The operator's `finish` (report, log tail, driver kept or deleted), the run
        summary, and the task's end."""
        app, published = started.app, dict[str, Any]()
        hook = SparkK8sHook(kubernetes_conn_id=self.conn_id)
        with DriverPods(hook.get_client(), owns_client=True) as pods:
            result = self._task_run(pods).finish(
                app,
                final,
                ref,
                driver_memory=started.driver_memory,
                streamed=bool(self.following.get("get_logs", True)),
                retries_left=tries.another,
                publish=published.update,
            )
        if result.report.xcom.get("cost"):
            self.log.info("%s", cost_line(result.report.xcom["cost"]))
        return ended(
            result.report,
            published,
            memory_raised=result.memory_raised,
            memory_factor=self.memory_factor,
            may_retry=tries.may_retry,
            extra_xcoms=self._summary(hook, app, final),
        )

    def _summary(
        self, hook: SparkK8sHook, app: TrackedApplication, final: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The run summary's XCom, when asked for and a History Server serves it."""
        if not self.reporting.get("run_summary", True):
            return {}
        _, extras = self._extras(hook)
        configured = airflow_conf.get(CONFIG_SECTION, HISTORY_SERVER_URL_OPTION, fallback=None)
        given = (extras.get(HISTORY_SERVER_URL_OPTION), configured)
        url = next((v.strip() for v in given if isinstance(v, str) and v.strip()), None)
        summary = read_summary(url, app, final, self.log, conn_id=self.conn_id)
        return {} if summary is None else {run_summary.XCOM_KEY: summary.to_xcom()}
