"""SparkK8sSubmitOperator: submit a Spark application to Kubernetes, follow it, report, clean up.

The operator holds the parameters, the templating, the deferral, the XComs, the links and the
kill; the use case is the task run (`services.task_run`, Spark's `Client.run`), one call per
phase:
1. `prepare`/`dry_run`: the parameters become spark-submit's command line, which the
   submission service parses, renders and plans; a dry run logs the YAML of every object
   (secrets redacted) and stops;
2. `start`: deliver an earlier try's kept result, or adopt the task instance's live driver,
   or submit a new one (the memory retry's sizes when its last driver ran out of memory);
3. defer to `SparkK8sApplicationTrigger`, or `wait` in the worker with the same reducer and
   the same timeout rule;
4. `execute_complete`: `finish` (the report, the driver log's tail, the driver kept or
   deleted per `on_finish_action`), the run summary, the XComs, fail with the driver's reason.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_sparkk8s.application import event_log, run_summary
from airflow_provider_sparkk8s.application.cost import cost_line
from airflow_provider_sparkk8s.application.events import is_complete_event
from airflow_provider_sparkk8s.application.guardrails import apply_pins
from airflow_provider_sparkk8s.application.kill_fence import read_from_answer
from airflow_provider_sparkk8s.application.outcome import Report
from airflow_provider_sparkk8s.application.policy import Policy
from airflow_provider_sparkk8s.application.resume import Finished
from airflow_provider_sparkk8s.application.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.spark_ui import (
    XCOM_KEY as SPARK_UI_XCOM_KEY,
)
from airflow_provider_sparkk8s.application.spark_ui import (
    SparkUiTarget,
    TaskInstanceUi,
    proxied_by_us,
    root_path,
    ui_port,
    with_proxy_base,
)
from airflow_provider_sparkk8s.application.spark_ui_access import SERIALIZED_CONN_FIELD
from airflow_provider_sparkk8s.application.submission_plan import namespace_of
from airflow_provider_sparkk8s.application.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.task_parameters import (
    Following,
    Ignored,
    Reporting,
    Uploads,
    refuse_krb5ccache,
)
from airflow_provider_sparkk8s.application.timeouts import (
    deferral_timeout,
    limit_text,
    ran_for,
    shadowed_timeouts,
)
from airflow_provider_sparkk8s.application.tracked import TrackedApplication
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
    SPARK_UI_TEMPLATE_KEY,
    configured_templates,
    link_templates,
    link_urls,
)
from airflow_provider_sparkk8s.operators import openlineage
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services import completion
from airflow_provider_sparkk8s.services.pods import DriverPods
from airflow_provider_sparkk8s.services.result_delivery import drop_result
from airflow_provider_sparkk8s.services.task_run import (
    HOW_TO_SET_THE_LINE,
    KeptResult,
    RunRequest,
    TaskRun,
    dry_run,
    read_summary,
)
from airflow_provider_sparkk8s.submission import kueue
from airflow_provider_sparkk8s.submission.spark_line import (
    SparkLine,
    choose_spark_line,
    driver_image,
)
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_VERSION,
    KILL_WHILE_DEFERRED_REACHES_TRIGGER,
    RETRY_POLICIES,
    AirflowFailException,
    AirflowTaskTimeout,
    BaseOperator,
    BaseOperatorLink,
    TaskDeferralTimeout,
    is_deferral_timeout,
    not_retried,
)
from airflow_provider_sparkk8s.version_compat import conf as airflow_conf

APPLICATION_XCOM_KEY = "spark_application"
# The History Server the run summary reads: the connection's extra, else `[sparkk8s]`'s.
HISTORY_SERVER_URL_OPTION = "history_server_url"
# A master URL for dry runs without a reachable connection: only printed, never called.
IN_CLUSTER_MASTER = "k8s://https://kubernetes.default.svc"


class SparkK8sSubmitOperator(BaseOperator):
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
    :param dry_run: render, validate (the connection's platform policy too, docs/policy.md)
        and log every object as YAML; send nothing.
    :param event_log_dir: the folder of Spark's event log (a shared path or object storage,
        ``s3a://logs/spark-events``) that a History Server reads: sets
        ``spark.eventLog.enabled`` and ``spark.eventLog.dir``. None: the connection's
        ``event_log_dir`` extra, else ``[sparkk8s] event_log_dir``, else no event log. The
        user's own ``spark.eventLog.*`` keys win (``spark.eventLog.enabled=false`` turns it off).

    The rest come in groups, each documented in `application/task_parameters.py` and in
    docs/operator.md: following (``poll_interval``, ``startup_timeout``, ``run_timeout``,
    ``get_logs``, ``log_tail_lines``, ``reattach_on_restart``, ``on_finish_action``),
    uploads (``upload_conn_id``, ``keep_uploaded_files``), reporting (``spark_ui_proxy``,
    ``event_log_rolling_max_file_size``, ``run_summary``).
    """

    template_fields: Sequence[str] = (
        "application",
        "conf",
        "files",
        "py_files",
        "archives",
        "jars",
        "application_args",
        "name",
        "namespace",
        "image",
        "driver_pod_template",
        "executor_pod_template",
        "java_class",
        "driver_class_path",
        "env_vars",
        "proxy_user",
        "keytab",
        "principal",
        "properties_file",
        "event_log_dir",
    )
    # A templated value naming a .yaml/.yml/.json file in the DAG folder or the DAG's
    # template_searchpath (or by absolute path) is read and rendered with Jinja; pod
    # templates then arrive as YAML or JSON text. Other values ending so (s3://.../conf.yaml
    # in `files`) stay strings.
    template_ext: Sequence[str] = (".yaml", ".yml", ".json")
    # Airflow deep-copies operators (DAG copies, test runs); an Event holds a lock, which
    # Airflow 3.0's deepcopy cannot copy.
    shallow_copy_attrs: Sequence[str] = ("_stop",)
    template_fields_renderers: ClassVar[dict[str, str]] = {
        "conf": "json",
        "application_args": "json",
        "env_vars": "json",
        "driver_pod_template": "json",
        "executor_pod_template": "json",
    }
    ui_color = "#e25a1c"  # Spark's orange

    @classmethod
    def get_serialized_fields(cls) -> frozenset[str]:
        """Airflow's fields and template fields, and the connection: the Spark UI plugin
        reads it from the serialized DAG in the api-server, never from an XCom (issue 44;
        Airflow's ExternalTaskMarker adds its `recursion_depth` the same way)."""
        return frozenset(super().get_serialized_fields() | {SERIALIZED_CONN_FIELD})

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

    def __init__(
        self,
        *,
        application: str = "",
        conf: Mapping[str, Any] | None = None,
        files: str | Sequence[str] | None = None,
        py_files: str | Sequence[str] | None = None,
        archives: str | Sequence[str] | None = None,
        jars: str | Sequence[str] | None = None,
        java_class: str | None = None,
        name: str | None = None,
        application_args: Sequence[Any] | None = None,
        driver_memory: str | None = None,
        driver_cores: int | str | None = None,
        executor_memory: str | None = None,
        executor_cores: int | str | None = None,
        num_executors: int | str | None = None,
        proxy_user: str | None = None,
        verbose: bool = False,
        driver_class_path: str | None = None,
        keytab: str | None = None,
        principal: str | None = None,
        env_vars: Mapping[str, Any] | None = None,
        properties_file: str | None = None,
        packages: str | None = None,
        exclude_packages: str | None = None,
        repositories: str | None = None,
        total_executor_cores: int | None = None,
        deploy_mode: str | None = None,
        conn_id: str | None = None,
        spark_binary: str | None = None,
        status_poll_interval: float | None = None,
        yarn_queue: str | None = None,
        use_krb5ccache: bool = False,
        openlineage_inject_parent_job_info: bool | None = None,
        openlineage_inject_transport_info: bool | None = None,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        namespace: str | None = None,
        image: str | None = None,
        spark_version: str | None = None,
        driver_pod_template: str | Mapping[str, Any] | None = None,
        executor_pod_template: str | Mapping[str, Any] | None = None,
        deferrable: bool | None = None,
        poll_interval: float = 5.0,
        startup_timeout: float | timedelta | None = 600.0,
        run_timeout: float | timedelta | None = None,
        on_finish_action: str = "delete_succeeded_pod",
        get_logs: bool = True,
        log_tail_lines: int = 100,
        reattach_on_restart: bool = True,
        dry_run: bool = False,
        upload_conn_id: str | None = None,
        keep_uploaded_files: bool = False,
        spark_ui_proxy: bool = True,
        event_log_dir: str | None = None,
        event_log_rolling_max_file_size: str | None = None,
        run_summary: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**_with_provider_callbacks(kwargs))
        refuse_krb5ccache(use_krb5ccache)
        following = Following.of(
            poll_interval=poll_interval,
            status_poll_interval=status_poll_interval,
            startup_timeout=startup_timeout,
            run_timeout=run_timeout,
            get_logs=get_logs,
            log_tail_lines=log_tail_lines,
            reattach_on_restart=reattach_on_restart,
            on_finish_action=on_finish_action,
        )
        # SparkSubmitOperator's parameters (SubmitParameters' fields), each under its own name:
        # Airflow renders the templated ones in place; _submit_parameters hands them on.
        self.application = application
        self.conf: dict[str, Any] = dict(conf or {})
        self.files, self.py_files, self.archives, self.jars = files, py_files, archives, jars
        self.driver_class_path, self.java_class = driver_class_path, java_class
        self.packages, self.exclude_packages = packages, exclude_packages
        self.repositories, self.total_executor_cores = repositories, total_executor_cores
        self.executor_cores, self.executor_memory = executor_cores, executor_memory
        self.driver_memory, self.driver_cores = driver_memory, driver_cores
        self.keytab, self.principal, self.proxy_user = keytab, principal, proxy_user
        self.name, self.num_executors = name, num_executors
        self.application_args = list(application_args) if application_args is not None else None
        self.env_vars = dict(env_vars) if env_vars else None
        self.verbose, self.properties_file = verbose, properties_file
        self.deploy_mode = deploy_mode
        # The operator's own: templated ones as attributes, the rest in typed groups.
        self.kubernetes_conn_id, self.namespace, self.image = kubernetes_conn_id, namespace, image
        self.spark_version = spark_version
        self.driver_pod_template = driver_pod_template
        self.executor_pod_template = executor_pod_template
        self.event_log_dir = event_log_dir
        if deferrable is None:
            deferrable = airflow_conf.getboolean("operators", "default_deferrable", fallback=False)
        self.deferrable = deferrable
        # Not `self.dry_run`: that is BaseOperator.dry_run(), which `airflow tasks test` calls.
        self.render_only = dry_run
        self.following = following
        self.uploads = Uploads(upload_conn_id, keep_uploaded_files)
        self.reporting = Reporting(spark_ui_proxy, event_log_rolling_max_file_size, run_summary)
        self.lineage = openlineage.switches(
            openlineage_inject_parent_job_info, openlineage_inject_transport_info
        )
        self.ignored = Ignored(conn_id, spark_binary, yarn_queue)
        self._reset_run_state()

    def _reset_run_state(self) -> None:
        """What one run learns as it goes (none of it is a parameter)."""
        # Where this run's driver UI is, once the submitted conf routes it through Airflow.
        self._ui_target: SparkUiTarget | None = None
        self._ui_base: str | None = None
        self._tracked: TrackedApplication | None = None
        # (namespace, task instance) of the result record this try kept or delivered.
        self._result_kept: tuple[str, TaskInstanceRef] | None = None
        self._cost: Mapping[str, Any] | None = None  # the finished application's, for lineage
        self._try_number: int | None = None  # the running try: its kill spares newer tries' pods
        self._stop = threading.Event()
        # The link URLs this run knows (None: not running, e.g. while the DAG is parsed).
        self.link_urls: dict[str, str] | None = None

    # ------------------------------------------------------------------ rendering

    def _submit_parameters(self, conf: Mapping[str, Any] | None = None) -> SubmitParameters:
        given = {field.name: getattr(self, field.name) for field in fields(SubmitParameters)}
        given["conf"] = self.conf if conf is None else conf
        # Without a name, the task id names the pods (spark-submit would use the class).
        given["name"] = self.name or self.task_id
        return SubmitParameters(**given)

    def spark_line(self) -> SparkLine:
        """The Spark release whose objects are built (given, else the image tag's), for a
        driver whose submission left no record (`_recorded`)."""
        return choose_spark_line(
            self.spark_version,
            driver_image(dict(self.conf), self.image),
            how_to_set=HOW_TO_SET_THE_LINE,
        )

    def _run_request(
        self, conf: Mapping[str, Any], master: str, namespace: str, policy: Policy | None
    ) -> RunRequest:
        """The rendered parameters as the task run takes them; relative paths point at the
        DAG file's folder."""
        fileloc = getattr(getattr(self, "dag", None), "fileloc", None) if self.has_dag() else None
        return RunRequest(
            parameters=self._submit_parameters(conf),
            master=master,
            namespace=namespace,
            cwd=os.path.dirname(os.path.abspath(fileloc)) if fileloc else os.getcwd(),
            environ=os.environ,
            image=self.image,
            spark_version=self.spark_version,
            driver_pod_template=self.driver_pod_template,
            executor_pod_template=self.executor_pod_template,
            policy=policy,
        )

    def _spark_conf(self, context: Any) -> dict[str, Any]:
        """`conf` with OpenLineage's parent job and transport information, when asked for,
        the event log the platform asks for, and the Spark UI's path under Airflow (the
        operator's alone: not the CLI's)."""
        injected = openlineage.inject(
            self.conf,
            context,
            parent_job=self.lineage.openlineage_inject_parent_job_info,
            transport=self.lineage.openlineage_inject_transport_info,
        )
        injected = event_log.with_event_log(injected, self._event_log())
        ui = _task_ui(TaskInstanceRef.from_context(context))
        # A Spark UI URL template means the deployment routes the UI its own way (an
        # ingress): its links must stay as Spark makes them.
        if not self._routes_ui(injected, ui.base):
            return injected
        if ui.reserved_segment():
            self.log.warning(
                "The Spark UI through Airflow: %r is a path segment Spark's UI scripts read as "
                "their own proxy's, so its executors page may stay empty; rename the DAG or "
                "task to avoid it",
                ui.reserved_segment(),
            )
        return with_proxy_base(injected, ui.base)

    def _resume_ui_base(self, context: Any) -> None:
        """After a deferral: the UI goes through Airflow if the try published its target."""
        base = _task_ui(TaskInstanceRef.from_context(context)).base
        # Asked only where the submission would have routed it: Airflow logs a missing XCom
        # as an error in the task log.
        if not self._routes_ui(self.conf, base):
            return
        ti = context["ti"]
        published = ti.xcom_pull(
            task_ids=ti.task_id, key=SPARK_UI_XCOM_KEY, map_indexes=ti.map_index
        )
        if SparkUiTarget.from_xcom(published) is not None:
            self._ui_base = base

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

    def _routes_ui(self, conf: Mapping[str, Any], base: str) -> bool:
        """Whether a submission of `conf` routes the UI's links through Airflow."""
        if not self.reporting.spark_ui_proxy or SPARK_UI_TEMPLATE_KEY in self._link_templates():
            return False
        return proxied_by_us(with_proxy_base(conf, base), base)

    def _remember_ui_target(self, submitted: Mapping[str, Any], ref: TaskInstanceRef) -> None:
        """Where the driver's UI will be (its pod comes with the driver), if the submitted
        conf routes the UI's links through Airflow."""
        base = _task_ui(ref).base
        routed = self.reporting.spark_ui_proxy and proxied_by_us(submitted, base)
        self._ui_target = (
            SparkUiTarget(self.kubernetes_conn_id, "", "", ui_port(submitted)) if routed else None
        )
        self._ui_base = base if routed else None

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

    def render_template(
        self, content: Any, context: Any, jinja_env: Any = None, seen_oids: Any = None
    ) -> Any:
        """Airflow's rendering, except for values ending in a template extension that are not
        template files: an absolute path is read from disk, anything else stays a string."""
        if isinstance(content, str) and content.endswith(tuple(self.template_ext)):
            import jinja2

            env = jinja_env or self.get_template_env()
            if os.path.isabs(content) and os.path.isfile(content):
                with open(content) as handle:
                    return self._render(env.from_string(handle.read()), context)
            try:
                env.get_template(content)
            except jinja2.TemplateNotFound:
                return self._render(env.from_string(content), context)
        return super().render_template(content, context, jinja_env, seen_oids)

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
        conf = self._spark_conf(context)
        if self.render_only:
            return self._dry_run(hook, ref, conf)
        namespace = namespace_of(self.namespace, conf) or hook.get_namespace()
        with self._driver_pods(hook) as pods:
            master = "k8s://" + pods.client.settings.server
            request = self._run_request(conf, master, namespace, self._policy(hook))
            started = self._task_run(pods).start(request, ref)
        self._remember_ui_target(started.submitted_conf, ref)
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
        following = self.following
        for name in shadowed_timeouts(
            following.startup_timeout, following.run_timeout, self.execution_timeout
        ):
            self.log.warning(
                "%s=%gs never fires: execution_timeout=%s ends the try first (it counts from "
                "the try's start, and fails the task without the driver's state); set %s "
                "below it to fail with the driver's reason",
                name,
                getattr(following, name),
                limit_text(self.execution_timeout),
                name,
            )

    def _dry_run(
        self, hook: SparkK8sHook, ref: TaskInstanceRef, conf: Mapping[str, Any]
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
        try:
            extra = hook.get_connection(self.kubernetes_conn_id).extra_dejson
        except Exception as error:  # noqa: BLE001 - the dry run goes on without the connection
            self.log.warning("Dry run: the policy from [sparkk8s] only: %s", error)
            extra = {}
        # A policy that does not parse fails the dry run as it fails a run.
        policy = policy_from_connection(self.kubernetes_conn_id, extra, configured_policy())
        return dry_run(self._run_request(conf, master, namespace, policy), ref, self.log)

    def _policy(self, hook: SparkK8sHook) -> Policy | None:
        """The platform policy: the connection's `policy` extra, else `[sparkk8s] policy`."""
        extra = hook.get_connection(self.kubernetes_conn_id).extra_dejson
        return policy_from_connection(self.kubernetes_conn_id, extra, configured_policy())

    def _publish(self, context: Any, app: TrackedApplication) -> None:
        """Push what is known now: the application (for execute_complete) and link URLs (the
        links work while the task is deferred)."""
        ti = context["ti"]
        ti.xcom_push(key=APPLICATION_XCOM_KEY, value=app.to_kwargs())
        if self._ui_target is not None:
            target = replace(self._ui_target, namespace=app.namespace, driver_pod=app.driver_pod)
            ti.xcom_push(key=SPARK_UI_XCOM_KEY, value=target.to_xcom())
        self.link_urls = self._link_urls(app)
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

    def _connection_or_config(self, option: str) -> str | None:
        """The connection's extra `option`, else `[sparkk8s] option` (None when empty)."""
        extras = self._connection_extras()
        for value in (extras.get(option), airflow_conf.get(CONFIG_SECTION, option, fallback=None)):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    def _link_templates(self) -> dict[str, str]:
        """The URL templates the connection's extras or `[sparkk8s]` configure."""
        # Links are a convenience: an unreadable connection never fails the task for them.
        return link_templates(self._connection_extras(), configured_templates())

    def _link_urls(self, app: TrackedApplication) -> dict[str, str]:
        """{link XCom key: URL} for the configured URL templates."""
        values = {
            "namespace": app.namespace,
            "driver_pod": app.driver_pod,
            "application_id": app.application_id,
            "submission_id": app.submission_id,
            "conn_id": self.kubernetes_conn_id,
        }
        templates = self._link_templates()
        if self._ui_base is not None and SPARK_UI_TEMPLATE_KEY not in templates:
            # No UI of the deployment's own: the one through Airflow (plugins/spark_ui.py).
            origin = urlsplit(_api_base_url())._replace(path="", query="", fragment="")
            templates[SPARK_UI_TEMPLATE_KEY] = urlunsplit(origin) + self._ui_base + "/"
        return link_urls(templates, values)

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
            trigger=SparkK8sApplicationTrigger(
                application_id=app.application_id,
                namespace=app.namespace,
                kubernetes_conn_id=self.kubernetes_conn_id,
                driver_pod_name=app.driver_pod,
                driver_container=app.driver_container,
                startup_timeout=self.following.startup_timeout,
                run_timeout=self.following.run_timeout,
                queue_timeout=app.queue_timeout,
                start_time=app.submitted_at,
                stream_logs=self.following.get_logs,
                delete_on_kill=True,
                upload_conn_id=self.uploads.upload_conn_id,
                keep_uploaded_files=self.uploads.keep_uploaded_files,
                try_number=self._try_number,
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
            self._resume_ui_base(context)
            self.link_urls = self._link_urls(app)
        retries_left = int(getattr(ti, "try_number", 1) or 1) <= int(
            getattr(ti, "max_tries", 0) or 0
        )
        with self._driver_pods(self._hook()) as pods:
            ended = self._task_run(pods).finish(
                app,
                event,
                ref,
                driver_memory=driver_memory,
                streamed=streamed,
                retries_left=retries_left,
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
        if app is not None and event is not None and _of_another_application(event, app):
            # A cleared try's old trigger can fire (its driver deleted by this try) and
            # resume this try: that event is not this application's end.
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
        it again (`application.resume` decides)."""
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
        limit = f"execution_timeout={limit_text(self.execution_timeout)}"
        if not stored:
            raise TaskDeferralTimeout(f"{limit} passed while deferred (no driver was recorded)")
        app = self._tracked = TrackedApplication.from_kwargs(stored)
        with self._driver_pods(self._hook()) as pods:
            message, xcom = self._task_run(pods).fail_on_timeout(app, limit)
        ti.xcom_push(key=APPLICATION_XCOM_KEY, value=xcom)
        raise TaskDeferralTimeout(message)


def _with_provider_callbacks(kwargs: dict[str, Any]) -> dict[str, Any]:
    """BaseOperator's arguments with the provider's retry policy (unless the task sets one)
    and its success callback added."""
    if RETRY_POLICIES and kwargs.get("retry_policy") is None:
        # Application errors fail at once, infrastructure is retried: the same rule as on
        # Airflow 3.0-3.2 (AirflowFailException), where there are no policies.
        from airflow_provider_sparkk8s.operators.retry_policy import SparkK8sRetryPolicy

        kwargs["retry_policy"] = SparkK8sRetryPolicy()
    # Airflow runs success callbacks once the success is recorded: a kept result's
    # record is dropped there (`application.delivery`).
    kwargs["on_success_callback"] = [
        *_callbacks(kwargs.get("on_success_callback")),
        _result_delivered,
    ]
    return kwargs


def _api_base_url() -> str:
    return airflow_conf.get("api", "base_url", fallback="") or ""


def _task_ui(ref: TaskInstanceRef) -> TaskInstanceUi:
    """The task instance's Spark UI path, under the path Airflow is served at."""
    root = root_path(_api_base_url())
    return TaskInstanceUi(ref.dag_id, ref.run_id, ref.task_id, ref.map_index, root=root)


def _of_another_application(event: Mapping[str, Any], app: TrackedApplication) -> bool:
    other = event.get("application_id")
    return bool(other) and other != app.application_id


def _callbacks(given: Any) -> list[Any]:
    """A task's callbacks as a list (Airflow takes one, a list, or None)."""
    if given is None:
        return []
    return list(given) if isinstance(given, (list, tuple)) else [given]


def _result_delivered(context: Any) -> None:
    task = context.get("task")
    if isinstance(task, SparkK8sSubmitOperator):
        task.result_delivered(context)
