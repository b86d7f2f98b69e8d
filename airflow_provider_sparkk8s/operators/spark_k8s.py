"""SparkK8sSubmitOperator: submit a Spark application to Kubernetes, follow it, report, clean up.

The operator holds Airflow's part: the parameters (operators/spark_k8s_parameters.py), the
deferral, the XComs, the links, the kill. The use case is the task run (`services.task.task_run`,
Spark's `Client.run`), one call per phase: `dry_run`, or `start` (a kept result, adopt, or
submit); then defer to `SparkK8sApplicationTrigger` or `wait` in the worker (the same
reducer, the same timeout rule); `execute_complete` calls `finish` (the report, the driver
log's tail, the driver kept or deleted) and fails with the driver's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_sparkk8s.application.following.cost import cost_line
from airflow_provider_sparkk8s.application.following.events import is_complete_event
from airflow_provider_sparkk8s.application.following.timeouts import (
    deferral_timeout,
    limit_text,
    ran_for,
)
from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.policy.guardrails import apply_pins
from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
from airflow_provider_sparkk8s.application.task.kill_fence import read_from_answer
from airflow_provider_sparkk8s.application.task.memory_retry import retries_left
from airflow_provider_sparkk8s.application.task.outcome import Report
from airflow_provider_sparkk8s.application.task.resume import Finished, of_another_application
from airflow_provider_sparkk8s.application.task.submission_plan import namespace_of
from airflow_provider_sparkk8s.application.task.task_end import APPLICATION_XCOM_KEY
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui import event_log, run_summary
from airflow_provider_sparkk8s.application.ui.live_ui import (
    XCOM_KEY as SPARK_UI_XCOM_KEY,
)
from airflow_provider_sparkk8s.errors import NOT_RETRIED, SparkConfError
from airflow_provider_sparkk8s.hooks.airflow_stats import airflow_metrics
from airflow_provider_sparkk8s.hooks.spark_k8s import (
    SparkK8sHook,
    configured_policy,
    connection_extras,
    policy_from_connection,
)
from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook
from airflow_provider_sparkk8s.links.spark_k8s import (
    CONFIG_SECTION,
    LINKS,
    configured_templates,
    link_templates,
)
from airflow_provider_sparkk8s.operators import openlineage
from airflow_provider_sparkk8s.operators.spark_k8s_parameters import SparkK8sSubmitParameters
from airflow_provider_sparkk8s.operators.spark_ui_route import SparkUiRoute
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.task import completion
from airflow_provider_sparkk8s.services.task.result_delivery import drop_result
from airflow_provider_sparkk8s.services.task.task_prepare import ConfAdditions, dry_run
from airflow_provider_sparkk8s.services.task.task_run import KeptResult, TaskRun
from airflow_provider_sparkk8s.services.ui.history_server import read_summary
from airflow_provider_sparkk8s.submission import kueue
from airflow_provider_sparkk8s.triggers.worker_free_end import end_in_worker
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_VERSION,
    KILL_WHILE_DEFERRED_REACHES_TRIGGER,
    RETRY_POLICIES,
    AirflowFailException,
    AirflowTaskTimeout,
    BaseOperatorLink,
    TaskDeferralTimeout,
    is_deferral_timeout,
    not_retried,
)
from airflow_provider_sparkk8s.version_compat import conf as airflow_conf

# The History Server the run summary reads: the connection's extra, else `[sparkk8s]`'s.
HISTORY_SERVER_URL_OPTION = "history_server_url"
# A master URL for dry runs without a reachable connection: only printed, never called.
IN_CLUSTER_MASTER = "k8s://https://kubernetes.default.svc"


class SparkK8sSubmitOperator(SparkK8sSubmitParameters):
    """Run a Spark application on Kubernetes in cluster mode, with no spark-submit and no JVM.

    Parameters shared with ``SparkSubmitOperator`` keep its names and meaning:
    ``application``, ``conf``, ``files``, ``py_files``, ``archives``, ``jars``, ``java_class``,
    ``name``, ``application_args``, ``driver_memory``, ``driver_cores``, ``executor_memory``,
    ``executor_cores``, ``num_executors``, ``proxy_user``, ``verbose``, ``driver_class_path``,
    ``keytab``, ``principal``, ``env_vars`` (the driver's environment), ``properties_file``,
    ``deploy_mode`` (``cluster`` only), ``packages``, ``exclude_packages``, ``repositories``
    (passed to the driver to resolve, checked as spark-submit checks them),
    ``openlineage_inject_parent_job_info`` and ``openlineage_inject_transport_info``
    (defaults from ``[openlineage] spark_inject_parent_job_info`` /
    ``spark_inject_transport_info``; the openlineage provider's own helpers write the keys;
    without that provider nothing changes). ``conn_id``, ``spark_binary`` and ``yarn_queue``
    are accepted and ignored, and ``status_poll_interval`` means ``poll_interval``, so a task
    can move over by changing the import and adding ``image``. ``total_executor_cores``
    (standalone only) and ``use_krb5ccache`` (give ``keytab`` and ``principal``) are refused
    with a clear error.

    Local files (``application``, ``py_files``, ``files``, ``archives``, ``jars`` as plain
    paths or ``file:``) are uploaded to ``conf["spark.kubernetes.file.upload.path"]`` before
    anything is submitted, as spark-submit uploads them; a relative path is read from the
    DAG file's folder, so ``application="jobs/etl.py"`` next to the DAG works.

    :param kubernetes_conn_id: the ``spark_k8s`` connection (cluster and credentials).
    :param namespace: where the application runs; else ``conf``, else the connection.
    :param image: the Spark container image (``spark.kubernetes.container.image``).
    :param spark_version: the image's Spark release; the objects follow that release. By
        default it is read from an official image's tag (``apache/spark:3.5.1``,
        ``spark:4.0.1-scala2.13-java17-python3-ubuntu``, ``apache/spark-py:v3.4.0``); when the
        tag says nothing, 4.3.0 is used and the task log warns. The line used is in the log
        and in the XCom (``spark_version``).
    :param driver_pod_template: a pod template file path, or a pod as a dict.
    :param executor_pod_template: same, for the executors.
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``).
    :param start_from_trigger: worker-free (Airflow 3.3+): the triggerer renders, submits,
        follows and ends the task (``SparkK8sSubmitTrigger``), with no worker; what needs a
        worker is refused when the DAG is parsed (docs/operator.md, "Worker-free"), and so is
        a template that uses the DAG's ``user_defined_macros`` or ``user_defined_filters``:
        the triggerer renders without them (use ``params``).
    :param dry_run: render, validate (the connection's platform policy too, docs/policy.md)
        and log every object as YAML; send nothing.
    :param event_log_dir: the folder of Spark's event log (a shared path or object storage,
        ``s3a://logs/spark-events``) that a History Server reads: sets
        ``spark.eventLog.enabled`` and ``spark.eventLog.dir``. None: the connection's
        ``event_log_dir`` extra, else ``[sparkk8s] event_log_dir``, else no event log. The
        user's own ``spark.eventLog.*`` keys win (``spark.eventLog.enabled=false`` turns it off).

    The rest come in groups, each documented in `application/task/task_parameters.py` and in
    docs/operator.md: following (``poll_interval``, ``startup_timeout``, ``run_timeout``,
    ``get_logs``, ``log_tail_lines``, ``reattach_on_restart``, ``on_finish_action``),
    uploads (``upload_conn_id``, ``keep_uploaded_files``), reporting (``spark_ui_proxy``,
    ``event_log_rolling_max_file_size``, ``run_summary``).
    """

    ui_color = "#e25a1c"  # Spark's orange

    @property
    def operator_extra_links(self) -> tuple[BaseOperatorLink, ...]:  # type: ignore[override]
        """Both links while the DAG is parsed (the UI's buttons); in a run, only those it has
        URLs for. Airflow stores each listed link's `get_link` when the task stops, so a link
        without a URL would be read back (an "XCom not found" error in the log) and stored
        as ""."""
        known = getattr(self, "link_urls", None)
        if known is None:
            return LINKS
        return tuple(link for link in LINKS if link.xcom_key in known)

    def _spark_conf(
        self, context: Any, ref: TaskInstanceRef
    ) -> tuple[dict[str, Any], ConfAdditions]:
        """`conf` with OpenLineage's parent job and transport information, when asked for
        (the provider's helpers read Airflow's context), and what the task run adds to it
        (`task_run.amended_conf`): the event log, the Spark UI's path under Airflow."""
        conf = openlineage.inject(
            self.conf,
            context,
            parent_job=self.lineage.openlineage_inject_parent_job_info,
            transport=self.lineage.openlineage_inject_transport_info,
        )
        chosen = self._event_log()
        return conf, ConfAdditions(chosen, self._ui_route().base_for(conf, ref, self.log))

    def _event_log(self) -> event_log.EventLogChoice:
        """The event log folder and rolling size: the parameters, the connection's extras,
        then `[sparkk8s]`."""
        # A dry run needs no connection; a real run fails on an unreadable one next.
        extras = self._connection_extras()
        config = {
            option: airflow_conf.get(CONFIG_SECTION, option, fallback=None)
            for option in (event_log.DIR_OPTION, event_log.ROLLING_OPTION)
        }
        rolling = self.reporting.event_log_rolling_max_file_size
        return event_log.choose(self.event_log_dir, rolling, extras, config)

    # ------------------------------------------------------------------ execute

    def _hook(self) -> SparkK8sHook:
        return SparkK8sHook(kubernetes_conn_id=self.kubernetes_conn_id)

    @staticmethod
    def _driver_pods(hook: SparkK8sHook) -> DriverPods:
        return DriverPods(hook.get_client(), owns_client=True)

    def _task_run(self, pods: DriverPods) -> TaskRun:
        """The task run's phases over `pods`, with this task's groups of parameters."""
        storage = SparkK8sUploadStorageHook(self.uploads.upload_conn_id)
        factor = getattr(getattr(self, "retry_policy", None), "memory_factor", None)
        return TaskRun(
            pods,
            self.following,
            self.uploads,
            uploads_conf=self.conf,
            storage_for=storage.storage,
            remove_uploads=storage.remove,
            log=self.log,
            metrics=airflow_metrics(),
            # The retry policy's out-of-memory factor, when it has one (SparkK8sRetryPolicy).
            memory_factor=float(factor) if isinstance(factor, (int, float)) else None,
        )

    def execute(self, context: Any) -> Any:
        try:
            return self._execute(context)
        except SparkConfError as error:
            # Bad input cannot get better on a retry: fail now. API errors stay retriable.
            raise AirflowFailException(f"{error} (invalid input: not retried)") from error
        except AirflowTaskTimeout as error:
            # execution_timeout's signal in the worker: Airflow calls on_kill next, which
            # deletes the driver and its uploads; the message names them.
            app = self._tracked
            if app is None:
                raise
            raise AirflowTaskTimeout(
                f"execution_timeout={limit_text(self.execution_timeout)} passed: Spark application "
                f"{app.application_id} (driver pod {app.submission_id}) ran for "
                f"{ran_for(app.submitted_at, datetime.now(UTC))}; deleting it"
            ) from error

    def _execute(self, context: Any) -> Any:
        self.link_urls = {}  # none until a driver exists
        self._warn_of_unused_parameters()
        ref = TaskInstanceRef.from_context(context)
        self._try_number = ref.try_number
        hook = self._hook()
        conf, additions = self._spark_conf(context, ref)
        if self.render_only:
            return self._dry_run(hook, ref, conf, additions)
        namespace = namespace_of(self.namespace, conf) or hook.get_namespace()
        with self._driver_pods(hook) as pods:
            master = "k8s://" + pods.client.settings.server
            request = self._run_request(conf, additions, master, namespace, self._policy(hook))
            started = self._task_run(pods).start(request, ref)
        self._ui_target, self._ui_base = self._ui_route().target(started.submitted_conf, ref)
        if isinstance(started, KeptResult):
            return self._deliver_kept(context, ref, started)
        app = self._tracked = started.app
        self._publish(context, app)
        if self.deferrable:
            self._defer(context, app, started.driver_memory)
        event = self._wait_in_worker(app)
        return self.execute_complete(
            context, event, application=app.to_kwargs(), driver_memory=started.driver_memory
        )

    def _deliver_kept(self, context: Any, ref: TaskInstanceRef, kept: KeptResult) -> Any:
        """An earlier try's application succeeded and Airflow never recorded it (its stale
        event after a deferral, a worker lost at the end): deliver that result, do not run
        the application again."""
        context["ti"].xcom_push(key=APPLICATION_XCOM_KEY, value=kept.kept.application)
        self._result_kept = (kept.namespace, ref)
        self.log.info(
            "Spark application %s succeeded in try %d, but Airflow did not record that try's "
            "success: delivering its result instead of running the application again",
            kept.kept.application.get("application_id"),
            kept.kept.try_number,
        )
        return kept.kept.returned

    def result_delivered(self, context: Any) -> None:
        """The success callback: drop the kept result once Airflow holds the task instance
        as success (a callback also runs when the success could not be sent)."""
        if self._result_kept is None:
            return
        namespace, ref = self._result_kept
        try:
            answer = context["ti"].get_task_states(
                dag_id=ref.dag_id, task_ids=[ref.task_id], run_ids=[ref.run_id]
            )
        except Exception as error:  # noqa: BLE001 - unknown: the record stays, harmless
            self.log.warning("Keeping the result record: the task's state is unknown (%s)", error)
            return
        state = read_from_answer(answer, ref)
        if state.state != "success":
            self.log.warning("Keeping the result record: the task instance is %s", state.describe())
            return
        with self._driver_pods(self._hook()) as pods:
            drop_result(pods, ref, namespace, self.log)

    def _warn_of_unused_parameters(self) -> None:
        """SparkSubmitOperator's parameters that have no role on Kubernetes, and a startup or
        run timeout that execution_timeout always ends first: say so once."""
        warning = self.ignored.warning(self.kubernetes_conn_id)
        if warning:
            self.log.warning("%s", warning)
        for shadowed in self.following.shadowed_by(self.execution_timeout):
            self.log.warning("%s", shadowed)

    def _dry_run(
        self,
        hook: SparkK8sHook,
        ref: TaskInstanceRef,
        conf: Mapping[str, Any],
        additions: ConfAdditions,
    ) -> dict[str, Any]:
        try:
            namespace = namespace_of(self.namespace, conf) or hook.get_namespace()
            client = hook.get_client()
            master = "k8s://" + client.settings.server
            client.close()
        except Exception as error:  # noqa: BLE001 - a dry run must not need a reachable cluster
            self.log.warning(
                "Dry run without the connection %s: %s", self.kubernetes_conn_id, error
            )
            namespace = namespace_of(self.namespace, conf) or "default"
            master = IN_CLUSTER_MASTER
        policy = self._policy(hook, dry_run=True)
        return dry_run(self._run_request(conf, additions, master, namespace, policy), ref, self.log)

    def _policy(self, hook: SparkK8sHook, *, dry_run: bool = False) -> Policy | None:
        """The platform policy: the connection's `policy` extra, else `[sparkk8s] policy`. A
        dry run needs no cluster: without the connection, `[sparkk8s]`'s alone. A policy that
        does not parse fails either way."""
        try:
            extra = hook.get_connection(self.kubernetes_conn_id).extra_dejson
        except Exception as error:
            if not dry_run:
                raise
            self.log.warning("Dry run: the policy from [sparkk8s] only: %s", error)
            extra = {}
        return policy_from_connection(self.kubernetes_conn_id, extra, configured_policy())

    def _publish(self, context: Any, app: TrackedApplication) -> None:
        """Push what is known now: the application (for execute_complete) and link URLs (the
        links work while the task is deferred)."""
        ti = context["ti"]
        ti.xcom_push(key=APPLICATION_XCOM_KEY, value=app.to_kwargs())
        if self._ui_target is not None:
            target = replace(self._ui_target, namespace=app.namespace, driver_pod=app.driver_pod)
            ti.xcom_push(key=SPARK_UI_XCOM_KEY, value=target.to_xcom())
        self.link_urls = self._ui_route().link_urls(app, self._ui_base)
        for key, url in self.link_urls.items():
            ti.xcom_push(key=key, value=url)

    def _connection_extras(self) -> dict[str, Any]:
        """The connection's extras, or none when it cannot be read (the callers' values are
        defaults and conveniences: the submission reads the connection itself)."""
        try:
            return connection_extras(
                self._hook().get_connection(self.kubernetes_conn_id).extra_dejson
            )
        except Exception:  # noqa: BLE001 - see the docstring
            return {}

    def _ui_route(self) -> SparkUiRoute:
        """The Spark UI's route and the links, as the connection or `[sparkk8s]` configure
        them (links are a convenience: an unreadable connection never fails the task)."""
        templates = link_templates(self._connection_extras(), configured_templates())
        return SparkUiRoute(self.reporting.spark_ui_proxy, templates, self.kubernetes_conn_id)

    def _connection_or_config(self, option: str) -> str | None:
        """The connection's extra `option`, else `[sparkk8s] option` (None when empty)."""
        extras = self._connection_extras()
        for value in (extras.get(option), airflow_conf.get(CONFIG_SECTION, option, fallback=None)):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    # ------------------------------------------------------------------ waiting

    def _defer(
        self,
        context: Any,
        app: TrackedApplication,
        driver_memory: Mapping[str, Any] | None = None,
    ) -> None:
        from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger

        # Airflow's signal-based execution_timeout ends when the worker parks the task: the
        # deferral carries what is left of it, and its timeout resumes `resume_execution`.
        timeout = deferral_timeout(
            self.execution_timeout, getattr(context["ti"], "start_date", None), datetime.now(UTC)
        )
        if timeout is not None and timeout <= timedelta(0):
            self._fail_by_execution_timeout(context)
        self.log.info("Deferring: the triggerer follows %s from here", app.submission_id)
        if not KILL_WHILE_DEFERRED_REACHES_TRIGGER:
            self.log.warning(
                "Airflow %s does not pass a kill of a deferred task to its trigger (3.3 does): "
                "marking this task failed while it waits leaves driver pod %s/%s running. "
                "Delete that pod to stop the application, or use deferrable=False, whose "
                "on_kill deletes it.",
                AIRFLOW_VERSION,
                app.namespace,
                app.driver_pod,
            )
        self.defer(
            trigger=SparkK8sApplicationTrigger.following_application(
                app,
                kubernetes_conn_id=self.kubernetes_conn_id,
                try_number=self._try_number,
                **self.following.trigger_settings(),
                **self.uploads.trigger_settings(),
            ),
            method_name="execute_complete",
            kwargs={"application": app.to_kwargs(), "driver_memory": driver_memory},
            timeout=timeout,
        )

    def _wait_in_worker(self, app: TrackedApplication) -> dict[str, Any]:
        with self._driver_pods(self._hook()) as pods:
            return self._task_run(pods).wait(app, self._stop, (self.dag_id, self.task_id))

    # ------------------------------------------------------------------ completion

    def execute_complete(
        self,
        context: Any,
        event: Mapping[str, Any] | None = None,
        application: Mapping[str, Any] | None = None,
        driver_memory: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        ti = context["ti"]
        ref = TaskInstanceRef.from_context(context)
        app, event, streamed = self._final_event(context, ref, event, application)
        self._tracked = app = self._recorded(app)
        if self.link_urls is None:  # resumed in a new process
            route = self._ui_route()
            self._ui_base = route.resumed_base(context, self.conf)
            self.link_urls = route.link_urls(app, self._ui_base)
        another_try = retries_left(getattr(ti, "try_number", 1), getattr(ti, "max_tries", 0))
        with self._driver_pods(self._hook()) as pods:
            ended = self._task_run(pods).finish(
                app,
                event,
                ref,
                driver_memory=driver_memory,
                streamed=streamed,
                retries_left=another_try,
                publish=lambda value: ti.xcom_push(key=APPLICATION_XCOM_KEY, value=value),
            )
        if ended.result_kept:
            self._result_kept = (app.namespace, ref)
        history_server = self._connection_or_config(HISTORY_SERVER_URL_OPTION)
        completion.warn_of_history_server(history_server, self.log)
        if self.reporting.run_summary:
            summary = read_summary(
                history_server, app, event, self.log, conn_id=self.kubernetes_conn_id
            )
            if summary is not None:
                ti.xcom_push(key=run_summary.XCOM_KEY, value=summary.to_xcom())
        return self._result(ended.report, app, memory_raised=ended.memory_raised)

    def _result(self, outcome: Report, app: TrackedApplication, *, memory_raised: bool) -> Any:
        """The XCom of a success, else the typed failure raised."""
        self._cost = outcome.xcom.get("cost")
        if self._cost:
            self.log.info("%s", cost_line(self._cost))
        if not outcome.succeeded:
            failure = outcome.exception(memory_raised=memory_raised)
            if isinstance(failure, NOT_RETRIED) and not RETRY_POLICIES:
                # Airflow before 3.3 has no retry policy to ask: fail without retries here.
                raise not_retried(failure, failure.kind.replace("_", " "))
            raise failure
        self.log.info(
            "Spark application %s succeeded in %ss",
            app.application_id,
            outcome.xcom["duration_seconds"],
        )
        return outcome.xcom

    def _final_event(
        self,
        context: Any,
        ref: TaskInstanceRef,
        event: Mapping[str, Any] | None,
        application: Mapping[str, Any] | None,
    ) -> tuple[TrackedApplication, Mapping[str, Any], bool]:
        """The application and its final event, and whether the trigger streamed its log."""
        ti = context["ti"]
        if application is None:  # dag.test() resumes with the event only
            application = ti.xcom_pull(
                task_ids=ti.task_id, key=APPLICATION_XCOM_KEY, map_indexes=ti.map_index
            )
        app = TrackedApplication.from_kwargs(application) if application else None
        # The trigger streamed the driver log, unless its event never came.
        streamed = self.deferrable and self.following.get_logs
        if app is not None and event is not None and of_another_application(event, app):
            self.log.info(
                "Ignoring the event of application %s (an earlier try's); following %s",
                event.get("application_id"),
                app.application_id,
            )
            event = None
        if app is None or event is None or not is_complete_event(event):
            app, event = self._resume_without_event(context, ref, app, event)
            streamed = False
        return app, event, streamed

    def _recorded(self, app: TrackedApplication) -> TrackedApplication:
        """`app` as its submission recorded it (`task_run.recorded`). A driver found by its
        labels alone, or recorded before the record held these, has none: its Spark line,
        event log and queue timeout are worked out from the task's parameters as they were
        submitted (the only place that works them out again)."""
        if app.spark_version is not None:
            return app
        logged = event_log.with_event_log(self.conf, self._event_log())
        return replace(
            app, spark_version=self.spark_line().version, event_log=event_log.enabled(logged)
        )

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage's extractor asks when the task ends: the `sparkk8s_cost` run facet."""
        return openlineage.cost_lineage(self._cost)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return openlineage.cost_lineage(self._cost)

    def _resume_without_event(
        self,
        context: Any,
        ref: TaskInstanceRef,
        app: TrackedApplication | None,
        event: Any,
    ) -> tuple[TrackedApplication, Mapping[str, Any]]:
        """The trigger's event is missing or partial (the process that ran the trigger was
        killed, and the task instance runs again): find the driver, then report it or follow
        it again (`application.task.resume` decides)."""
        self.log.warning(
            "Resumed without the trigger's final event (got %r); looking the driver up", event
        )
        self._try_number = ref.try_number
        hook = self._hook()
        with self._driver_pods(hook) as pods:
            decision = self._task_run(pods).resume(
                app, ref, lambda: namespace_of(self.namespace, self.conf) or hook.get_namespace()
            )
        if isinstance(decision, Finished):
            self.log.info("Driver %s has finished: reporting it", decision.app.submission_id)
            return decision.app, decision.event
        found = self._recorded(decision.app)
        if found.queue_timeout is None and found.adopted:  # no record: `conf`, pinned
            pinned = apply_pins(self._policy(hook), self.conf)
            found = replace(found, queue_timeout=kueue.queue_timeout_seconds(pinned))
        self.log.info("Following driver %s again", found.submission_id)
        self._tracked = found
        self._publish(context, found)
        if self.deferrable:
            self._defer(context, found)
        return found, self._wait_in_worker(found)

    # ------------------------------------------------------------------ kill

    def on_kill(self) -> None:
        """The task was killed while the worker followed the driver (a user's kill, or
        Airflow's execution_timeout in the worker): delete the driver pod and its uploads,
        unless a newer try of this task instance has adopted it (`ownership`).

        Owner references take the ConfigMap, Service and the rest; Spark's driver takes its
        executors. In deferred mode the trigger's `on_kill` does the same in the triggerer,
        and a deferral's timeout resumes here (`resume_execution`).
        """
        self._stop.set()
        app = self._tracked
        if app is None:
            return
        with self._driver_pods(self._hook()) as pods:
            self._task_run(pods).delete(app, why="task killed", kill_of_try=self._try_number)

    # ------------------------------------------------------------------ execution_timeout

    def resume_execution(
        self, next_method: str, next_kwargs: dict[str, Any] | None, context: Any
    ) -> Any:
        """Airflow's deferral timeout (execution_timeout, carried by `_defer`) resumes the
        task to fail it, without the trigger: the driver is deleted here, with its uploads,
        before the task fails with a timeout that names it."""
        if is_deferral_timeout(next_method, next_kwargs):
            self._fail_by_execution_timeout(context)
        return super().resume_execution(next_method, next_kwargs, context)

    def _fail_by_execution_timeout(self, context: Any) -> None:
        ti = context["ti"]
        stored = ti.xcom_pull(
            task_ids=ti.task_id, key=APPLICATION_XCOM_KEY, map_indexes=ti.map_index
        )
        if not stored and self.start_from_trigger:  # no XCom before a worker-free task ends
            stored = self._driver_by_labels(context)
        limit = f"execution_timeout={limit_text(self.execution_timeout)}"
        if not stored:
            raise TaskDeferralTimeout(f"{limit} passed while deferred (no driver was recorded)")
        app = self._tracked = TrackedApplication.from_kwargs(stored)
        with self._driver_pods(self._hook()) as pods:
            message, xcom = self._task_run(pods).fail_on_timeout(app, limit)
        ti.xcom_push(key=APPLICATION_XCOM_KEY, value=xcom)
        raise TaskDeferralTimeout(message)

    def _driver_by_labels(self, context: Any) -> dict[str, Any] | None:
        hook = self._hook()
        with self._driver_pods(hook) as pods:
            found = self._task_run(pods).driver_of(
                TaskInstanceRef.from_context(context),
                lambda: namespace_of(self.namespace, self.conf) or hook.get_namespace(),
            )
        return found.to_kwargs() if found else None

    def execute_worker_free_end(self, context: Any, event: Any = None) -> None:
        """A worker-free task's failure that must not retry (operators/worker_free_end.py)."""
        end_in_worker(event, context["ti"].xcom_push)
