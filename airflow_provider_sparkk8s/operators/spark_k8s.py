"""SparkK8sSubmitOperator: submit a Spark application to Kubernetes, follow it, report, clean up.

The operator holds the parameters, the templating and the defer/resume glue; the work is
elsewhere, one piece each:
1. render and validate: the parameters become spark-submit's command line
   (`spark_submit_args`), which the submission service parses, renders and plans
   (`services.submission`); a dry run logs the YAML of every object (secrets redacted) and
   stops;
2. adopt the task instance's live driver, or submit a new one (`task_submission`: the
   `reattach.decide` rule; the service uploads, sends, rolls back, and adopts the pod of a
   409 when another worker won the race);
3. defer to `SparkK8sApplicationTrigger`, or wait in the worker with the same reducer and
   the same timeout rule;
4. `execute_complete`: push the XCom, bring the driver log's tail, clean up per
   `on_finish_action` (`completion`), fail with the driver's reason.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_sparkk8s.application import event_log, run_summary
from airflow_provider_sparkk8s.application.cost import cost_line
from airflow_provider_sparkk8s.application.delivery import Undelivered
from airflow_provider_sparkk8s.application.events import is_complete_event
from airflow_provider_sparkk8s.application.follower import FollowSpec, Step
from airflow_provider_sparkk8s.application.guardrails import apply_pins
from airflow_provider_sparkk8s.application.kill_fence import read_from_answer
from airflow_provider_sparkk8s.application.memory_retry import (
    DriverMemory,
    memory_xcom,
    out_of_memory_drivers,
    planned_memory,
    raised,
)
from airflow_provider_sparkk8s.application.metrics import look_metrics, send, task_tags
from airflow_provider_sparkk8s.application.outcome import (
    ON_FINISH_ACTIONS,
    deletion_reason,
    needs_driver_exception,
    report,
    should_delete_driver,
)
from airflow_provider_sparkk8s.application.policy import Policy
from airflow_provider_sparkk8s.application.resume import Finished, Missing, decide_resume
from airflow_provider_sparkk8s.application.spark_submit_args import (
    SubmitParameters,
    spark_submit_argv,
)
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
from airflow_provider_sparkk8s.application.submission_plan import (
    KubernetesParameters,
    namespace_of,
    template_dict,
)
from airflow_provider_sparkk8s.application.task_identity import TaskInstanceRef, selector
from airflow_provider_sparkk8s.application.timeouts import (
    deferral_timeout,
    limit_text,
    ran_for,
    shadowed_timeouts,
    timeout_seconds,
)
from airflow_provider_sparkk8s.application.tracked import TrackedApplication
from airflow_provider_sparkk8s.errors import NOT_RETRIED, ApplicationFailed, SparkConfError
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
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
from airflow_provider_sparkk8s.operators import completion, openlineage
from airflow_provider_sparkk8s.operators.task_submission import TaskSubmission, adopt_or_submit
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services import submission
from airflow_provider_sparkk8s.services.driver_removal import (
    UNGUARDED,
    Unguarded,
    delete_driver,
)
from airflow_provider_sparkk8s.services.following import OnLook, follow_application
from airflow_provider_sparkk8s.services.history_server import read_run_summary, url_fetcher
from airflow_provider_sparkk8s.services.pods import DriverPods, application_selector
from airflow_provider_sparkk8s.services.result_delivery import drop_result, keep_result, kept_result
from airflow_provider_sparkk8s.submission import kueue
from airflow_provider_sparkk8s.submission.naming import new_submission_ids
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
    :param poll_interval: when waiting in the worker, the longest time between two timeout
        checks (the pods' changes arrive by watch at once).
    :param startup_timeout: seconds the driver may stay unscheduled or not started
        (Unschedulable, ImagePullBackOff, CreateContainerConfigError, ...); None: no limit.
        With Kueue (``spark.kubernetes.kueue.queueName`` in ``conf``) time queued does not
        count: it starts at the admission, and ``spark.kubernetes.kueue.queueTimeout`` (a
        Spark time, ``30min``) bounds the queue instead; a queued application past it fails
        as ``InfrastructureFailure`` (reason ``QueueTimeout``, retried by
        ``SparkK8sRetryPolicy``) and its driver and Workload are deleted. The XCom's
        ``queued_seconds`` says how long Kueue held it (None without Kueue).
    :param run_timeout: seconds the whole application may take; None: no limit.
    :param on_finish_action: ``delete_pod``, ``delete_succeeded_pod`` (keep it on failure)
        or ``keep_pod``. A timed-out driver is always deleted.
    :param get_logs: bring the driver log into the task log.
    :param log_tail_lines: how many last lines of the driver log a worker-side wait copies.
    :param reattach_on_restart: adopt this task instance's live driver instead of submitting
        again (otherwise the live one is deleted and a new one submitted).
    :param dry_run: render, validate (the connection's platform policy too, docs/policy.md)
        and log every object as YAML; send nothing.
    :param upload_conn_id: the connection for the upload path's storage (through Airflow's
        ObjectStoragePath where a provider maps it; an ``aws`` connection also without the
        amazon provider). None: the ``spark.hadoop.fs.s3a.*`` keys and the environment.
    :param keep_uploaded_files: keep the uploaded files when ``on_finish_action`` deletes the
        driver (by default they go with it).
    :param spark_ui_proxy: serve the live Spark UI through Airflow (docs/spark_ui.md): sets
        ``spark.ui.proxyBase`` to the task instance's path under the provider's plugin
        (unless ``conf`` sets it, or ``spark.ui.reverseProxy``) and publishes where the
        driver's UI is (XCom ``spark_ui``). False: Spark's own links (a port-forward).
    :param event_log_dir: the folder of Spark's event log (a shared path or object storage,
        ``s3a://logs/spark-events``) that a History Server reads: sets
        ``spark.eventLog.enabled`` and ``spark.eventLog.dir``. None: the connection's
        ``event_log_dir`` extra, else ``[sparkk8s] event_log_dir``, else no event log. The
        user's own ``spark.eventLog.*`` keys win (``spark.eventLog.enabled=false`` turns it off).
    :param event_log_rolling_max_file_size: roll the event log in files of this size
        (``128m``; at least ``10m``): ``spark.eventLog.rolling.enabled`` and
        ``spark.eventLog.rolling.maxFileSize``. None: the connection's extra of that name, else
        ``[sparkk8s]``'s, else one file.
    :param run_summary: after the driver ends, when its event log is on and a History Server
        is configured (the connection's ``history_server_url`` extra, else
        ``[sparkk8s] history_server_url``), read the application from the History Server's
        REST API: a short table in the task log and XCom ``run_summary`` (jobs, stages,
        tasks, bytes, spill, GC time, the slowest stage and its skew). A failure to read it
        only warns.
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
        super().__init__(**kwargs)
        if use_krb5ccache:
            raise SparkConfError(
                "use_krb5ccache", use_krb5ccache, "False", "give keytab and principal instead"
            )
        if on_finish_action not in ON_FINISH_ACTIONS:
            raise SparkConfError(
                "on_finish_action", on_finish_action, " or ".join(ON_FINISH_ACTIONS)
            )
        # SparkSubmitOperator's parameters (SubmitParameters' fields), each under its own name:
        # Airflow renders the templated ones in place; _submit_parameters hands them on.
        self.application = application
        self.conf: dict[str, Any] = dict(conf or {})
        self.files = files
        self.py_files = py_files
        self.archives = archives
        self.jars = jars
        self.driver_class_path = driver_class_path
        self.java_class = java_class
        self.packages = packages
        self.exclude_packages = exclude_packages
        self.repositories = repositories
        self.total_executor_cores = total_executor_cores
        self.executor_cores = executor_cores
        self.executor_memory = executor_memory
        self.driver_memory = driver_memory
        self.driver_cores = driver_cores
        self.keytab = keytab
        self.principal = principal
        self.proxy_user = proxy_user
        self.name = name
        self.num_executors = num_executors
        self.application_args = list(application_args) if application_args is not None else None
        self.env_vars = dict(env_vars) if env_vars else None
        self.verbose = verbose
        self.properties_file = properties_file
        self.deploy_mode = deploy_mode
        # SparkSubmitOperator's Spark connection, binary and YARN queue have no role here;
        # they are accepted so its tasks move over unchanged.
        self.conn_id = conn_id
        self.spark_binary = spark_binary
        self.yarn_queue = yarn_queue
        self.kubernetes_conn_id = kubernetes_conn_id
        self.namespace = namespace
        self.image = image
        self.spark_version = spark_version
        self.driver_pod_template = driver_pod_template
        self.executor_pod_template = executor_pod_template
        if deferrable is None:
            deferrable = airflow_conf.getboolean("operators", "default_deferrable", fallback=False)
        self.deferrable = deferrable
        self.poll_interval = float(status_poll_interval or poll_interval)
        self.startup_timeout = timeout_seconds("startup_timeout", startup_timeout)
        self.run_timeout = timeout_seconds("run_timeout", run_timeout)
        self.on_finish_action = on_finish_action
        self.get_logs = get_logs
        self.log_tail_lines = log_tail_lines
        self.reattach_on_restart = reattach_on_restart
        # Not `self.dry_run`: that is BaseOperator.dry_run(), which `airflow tasks test` calls.
        self.render_only = dry_run
        self.upload_conn_id = upload_conn_id
        self.keep_uploaded_files = keep_uploaded_files
        self.spark_ui_proxy = spark_ui_proxy
        self.event_log_dir = event_log_dir
        self.event_log_rolling_max_file_size = event_log_rolling_max_file_size
        self.run_summary = run_summary
        # Where this run's driver UI is, once the submitted conf routes it through Airflow.
        self._ui_target: SparkUiTarget | None = None
        self._ui_base: str | None = None
        parent_default, transport_default = openlineage.default_switches()
        self.openlineage_inject_parent_job_info = (
            parent_default
            if openlineage_inject_parent_job_info is None
            else openlineage_inject_parent_job_info
        )
        self.openlineage_inject_transport_info = (
            transport_default
            if openlineage_inject_transport_info is None
            else openlineage_inject_transport_info
        )
        self._tracked: TrackedApplication | None = None
        # (namespace, task instance) of the result record this try kept or delivered.
        self._result_kept: tuple[str, TaskInstanceRef] | None = None
        self._cost: Mapping[str, Any] | None = None  # the finished application's, for lineage
        self._try_number: int | None = None  # the running try: its kill spares newer tries' pods
        self._stop = threading.Event()
        # The submitted conf's queue timeout, once planned (a resume reads `conf`'s).
        self._queue_timeout: tuple[float | None] | None = None
        # The link URLs this run knows (None: not running, e.g. while the DAG is parsed).
        self.link_urls: dict[str, str] | None = None

    # ------------------------------------------------------------------ rendering

    def _submit_parameters(
        self, conf: Mapping[str, Any] | None = None, memory: DriverMemory | None = None
    ) -> SubmitParameters:
        if memory is not None:  # the out-of-memory retry's sizes win over the task's
            conf = {**(self.conf if conf is None else conf), **memory.conf()}
        return SubmitParameters(
            application=self.application,
            conf=self.conf if conf is None else conf,
            files=self.files,
            py_files=self.py_files,
            archives=self.archives,
            jars=self.jars,
            driver_class_path=self.driver_class_path,
            java_class=self.java_class,
            packages=self.packages,
            exclude_packages=self.exclude_packages,
            repositories=self.repositories,
            total_executor_cores=self.total_executor_cores,
            executor_cores=self.executor_cores,
            executor_memory=self.executor_memory,
            driver_memory=self.driver_memory
            if memory is None
            else memory.conf()["spark.driver.memory"],
            driver_cores=self.driver_cores,
            keytab=self.keytab,
            principal=self.principal,
            proxy_user=self.proxy_user,
            # Without a name, the task id names the pods (spark-submit would use the class).
            name=self.name or self.task_id,
            num_executors=self.num_executors,
            application_args=self.application_args,
            env_vars=self.env_vars,
            verbose=self.verbose,
            properties_file=self.properties_file,
            deploy_mode=self.deploy_mode,
        )

    def spark_line(self) -> SparkLine:
        """The Spark release whose objects are built (given, else the image tag's)."""
        return choose_spark_line(
            self.spark_version,
            driver_image(dict(self.conf), self.image),
            how_to_set='spark_version="X.Y.Z" on the operator',
        )

    def _base_folder(self) -> str:
        """Where relative `application`, `py_files`, ... paths point: the DAG file's folder."""
        fileloc = getattr(getattr(self, "dag", None), "fileloc", None) if self.has_dag() else None
        return os.path.dirname(os.path.abspath(fileloc)) if fileloc else os.getcwd()

    def _task_submission(
        self,
        ref: TaskInstanceRef,
        namespace: str,
        master: str,
        conf: Mapping[str, Any],
        policy: Policy | None = None,
        memory: DriverMemory | None = None,
    ) -> TaskSubmission:
        """The task's parameters as spark-submit's command line, parsed once (one clock for
        spark.app.submitTime), with what every submission of this task instance adds."""
        argv = ["--master", master, *spark_submit_argv(self._submit_parameters(conf, memory))]
        request = submission.SubmissionRequest(
            argv=argv,
            environ=os.environ,
            cwd=self._base_folder(),
            spark_version=self.spark_version,
            image=self.image,
        )
        arguments = submission.parse(request)
        line = self.spark_line()
        if line.warning:
            self.log.warning("%s", line.warning)
        self.log.info("The objects follow %s", line.describe())
        return TaskSubmission(
            ref=ref,
            arguments=arguments,
            kubernetes=KubernetesParameters(
                namespace=namespace,
                image=self.image,
                driver_pod_template=self.driver_pod_template,
                executor_pod_template=self.executor_pod_template,
                spark_version=line.version,
            ),
            spark_version=line.version,
            environ=os.environ,
            ids=new_submission_ids(),
            driver_pod_template=template_dict("driver_pod_template", self.driver_pod_template),
            executor_pod_template=template_dict(
                "executor_pod_template", self.executor_pod_template
            ),
            policy=policy,
        )

    def _spark_conf(self, context: Any) -> dict[str, Any]:
        """`conf` with OpenLineage's parent job and transport information, when asked for,
        the event log the platform asks for, and the Spark UI's path under Airflow (the
        operator's alone: not the CLI's)."""
        injected = openlineage.inject(
            self.conf,
            context,
            parent_job=self.openlineage_inject_parent_job_info,
            transport=self.openlineage_inject_transport_info,
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
        return event_log.choose(
            self.event_log_dir, self.event_log_rolling_max_file_size, extras, config
        )

    def _routes_ui(self, conf: Mapping[str, Any], base: str) -> bool:
        """Whether a submission of `conf` routes the UI's links through Airflow."""
        if not self.spark_ui_proxy or SPARK_UI_TEMPLATE_KEY in self._link_templates():
            return False
        return proxied_by_us(with_proxy_base(conf, base), base)

    def _remember_ui_target(self, submitted: Mapping[str, Any], ref: TaskInstanceRef) -> None:
        """Where the driver's UI will be (its pod comes with the driver), if the submitted
        conf routes the UI's links through Airflow."""
        base = _task_ui(ref).base
        routed = self.spark_ui_proxy and proxied_by_us(submitted, base)
        self._ui_target = (
            SparkUiTarget(self.kubernetes_conn_id, "", "", ui_port(submitted)) if routed else None
        )
        self._ui_base = base if routed else None

    # ------------------------------------------------------------------ execute

    def _hook(self) -> SparkK8sHook:
        return SparkK8sHook(kubernetes_conn_id=self.kubernetes_conn_id)

    def _upload_storage(self) -> SparkK8sUploadStorageHook:
        return SparkK8sUploadStorageHook(self.upload_conn_id)

    @staticmethod
    def _driver_pods(hook: SparkK8sHook) -> DriverPods:
        return DriverPods(hook.get_client(), owns_client=True)

    def _list_drivers(self, pods: DriverPods, ref: TaskInstanceRef, namespace: str) -> list[Pod]:
        """Every driver pod this task instance ever submitted (any state)."""
        return pods.list_pods(namespace, selector(ref))

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
        self._warn_of_ignored_parameters()
        self._warn_of_shadowed_timeouts()
        ref = TaskInstanceRef.from_context(context)
        self._try_number = ref.try_number
        hook = self._hook()
        conf = self._spark_conf(context)
        if self.render_only:
            return self._dry_run(hook, ref, conf)
        namespace = namespace_of(self.namespace, conf) or hook.get_namespace()
        with self._driver_pods(hook) as pods:
            master = "k8s://" + pods.client.settings.server
            policy = self._policy(hook)
            task = self._task_submission(ref, namespace, master, conf, policy=policy)
            first = task.plan(1)  # before any request: bad input fails here, nothing sent
            self._queue_timeout = (kueue.queue_timeout_seconds(first.spark_conf),)
            self._remember_ui_target(first.spark_conf, ref)
            namespace_listed = first.rendered.namespace
            kept = kept_result(pods, ref, namespace_listed, self.log)
            if kept is not None:
                return self._deliver_kept(context, ref, namespace_listed, kept)
            drivers = self._list_drivers(pods, ref, namespace_listed)
            memory = planned_memory(first.spark_conf, first.rendered.driver_pod, task.spark_version)
            before, oom_drivers = None, out_of_memory_drivers(drivers)
            factor = self._memory_factor()
            if factor is not None and oom_drivers:  # this try is the out-of-memory retry
                before, memory = memory, raised(memory, factor)
                self.log.info(
                    "Driver %s ran out of memory: submitting with %s (was %s)",
                    oom_drivers[-1],
                    memory.describe(),
                    before.describe(),
                )
                task = self._task_submission(
                    ref, namespace, master, conf, policy=policy, memory=memory
                )
                first = task.plan(1)
            app = adopt_or_submit(
                pods,
                task,
                first,
                _listed_first(drivers, lambda: self._list_drivers(pods, ref, namespace_listed)),
                reattach=self.reattach_on_restart,
                storage_for=self._upload_storage().storage,
                log=self.log,
                remove_uploads=self._upload_storage().remove,
                metrics=airflow_metrics(),
            )
            if before is not None and self.on_finish_action == "delete_pod":
                for name in oom_drivers:  # kept for this retry only (see execute_complete)
                    delete_driver(
                        pods,
                        app.namespace,
                        name,
                        remove_uploads=self._upload_storage().remove,
                        log=self.log,
                        keep_uploads=self.keep_uploaded_files,
                        why="read for the memory retry",
                    )
        self._tracked = app
        self._publish(context, app)
        memory_used = memory_xcom(memory, before, factor)
        if self.deferrable:
            self._defer(context, app, memory_used)
        event = self._wait_in_worker(app)
        return self.execute_complete(
            context, event, application=app.to_kwargs(), driver_memory=memory_used
        )

    def _deliver_kept(
        self, context: Any, ref: TaskInstanceRef, namespace: str, kept: Undelivered
    ) -> dict[str, Any]:
        """An earlier try's application succeeded and Airflow never recorded it (its stale
        event after a deferral, a worker lost at the end): deliver that result, do not run
        the application again."""
        context["ti"].xcom_push(key=APPLICATION_XCOM_KEY, value=kept.application)
        self._result_kept = (namespace, ref)
        self.log.info(
            "Spark application %s succeeded in try %d, but Airflow did not record that try's "
            "success: delivering its result instead of running the application again",
            kept.application.get("application_id"),
            kept.try_number,
        )
        return kept.returned

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

    def _memory_factor(self) -> float | None:
        """The retry policy's out-of-memory factor, when it has one (SparkK8sRetryPolicy)."""
        factor = getattr(getattr(self, "retry_policy", None), "memory_factor", None)
        return float(factor) if isinstance(factor, (int, float)) else None

    def _warn_of_ignored_parameters(self) -> None:
        """SparkSubmitOperator's parameters that have no role on Kubernetes: say so once."""
        ignored = {
            "conn_id": self.conn_id,
            "spark_binary": self.spark_binary,
            "yarn_queue": self.yarn_queue,
        }
        given = ", ".join(f"{name}={value!r}" for name, value in ignored.items() if value)
        if given:
            self.log.warning(
                "Ignoring %s: there is no spark-submit and no Spark connection here. The "
                "spark_k8s connection kubernetes_conn_id=%r gives the master (its API server) "
                "and the default namespace (or set namespace=); Kubernetes has no YARN queue.",
                given,
                self.kubernetes_conn_id,
            )

    def _warn_of_shadowed_timeouts(self) -> None:
        """A startup or run timeout that execution_timeout always ends first: say so once."""
        for name in shadowed_timeouts(
            self.startup_timeout, self.run_timeout, self.execution_timeout
        ):
            self.log.warning(
                "%s=%gs never fires: execution_timeout=%s ends the try first (it counts from "
                "the try's start, and fails the task without the driver's state); set %s "
                "below it to fail with the driver's reason",
                name,
                getattr(self, name),
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
        policy = self._dry_run_policy(hook)
        planned = self._task_submission(ref, namespace, master, conf, policy=policy).plan(1)
        preview = submission.dry_run(planned)
        for warning in planned.conf_key_warnings:
            self.log.warning("%s", warning)
        if preview.policy:
            self.log.info("Dry run: %s", preview.policy)
        for upload in preview.uploads:
            self.log.info("Dry run: would upload %s to %s", upload.source, upload.target)
        rendered = planned.rendered
        self.log.info(
            "Dry run: %d objects of application %s, nothing sent:\n%s",
            len(preview.objects),
            rendered.app_id,
            preview.yaml,
        )
        return {
            "dry_run": True,
            "spark_version": self.spark_line().version,
            "application_id": rendered.app_id,
            "namespace": rendered.namespace,
            "driver_pod": rendered.driver_pod_name,
            "objects": [f"{o.get('kind')}/{o['metadata'].get('name')}" for o in preview.objects],
        }

    def _policy(self, hook: SparkK8sHook) -> Policy | None:
        """The platform policy: the connection's `policy` extra, else `[sparkk8s] policy`."""
        extra = hook.get_connection(self.kubernetes_conn_id).extra_dejson
        return policy_from_connection(self.kubernetes_conn_id, extra, configured_policy())

    def _dry_run_policy(self, hook: SparkK8sHook) -> Policy | None:
        """`_policy`, or `[sparkk8s] policy` alone when the connection cannot be read (a dry
        run needs no cluster); a policy that does not parse fails either way."""
        try:
            extra = hook.get_connection(self.kubernetes_conn_id).extra_dejson
        except Exception as error:  # noqa: BLE001 - the dry run goes on without the connection
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
                startup_timeout=self.startup_timeout,
                run_timeout=self.run_timeout,
                queue_timeout=self._queue_timeout_seconds(app),
                start_time=app.submitted_at,
                stream_logs=self.get_logs,
                delete_on_kill=True,
                upload_conn_id=self.upload_conn_id,
                keep_uploaded_files=self.keep_uploaded_files,
                try_number=self._try_number,
            ),
            method_name="execute_complete",
            kwargs={"application": app.to_kwargs(), "driver_memory": driver_memory},
            timeout=timeout,
        )

    def _queue_timeout_seconds(self, app: TrackedApplication) -> float | None:
        """The submitted conf's `spark.kubernetes.kueue.queueTimeout` (a policy may pin it);
        on a resume in a new process, what the submission recorded in `app`; for a driver
        found by its labels alone, `conf` with the policy's pins, as it was submitted."""
        if self._queue_timeout is not None:
            return self._queue_timeout[0]
        if app.queue_timeout is not None or not app.adopted:
            return app.queue_timeout
        return kueue.queue_timeout_seconds(apply_pins(self._policy(self._hook()), self.conf))

    def _wait_in_worker(self, app: TrackedApplication) -> dict[str, Any]:
        """Follow the application's pods by watch until the follower ends it (the trigger's
        rules); the clock is read at least every poll_interval."""
        spec = FollowSpec(
            app.application_id,
            app.namespace,
            app.driver_pod,
            app.driver_container,
            start_time=datetime.fromisoformat(app.submitted_at).timestamp(),
            startup_timeout=self.startup_timeout,
            run_timeout=self.run_timeout,
            queue_timeout=self._queue_timeout_seconds(app),
        )
        with self._driver_pods(self._hook()) as driver_pods:
            step = follow_application(
                driver_pods,
                spec,
                stop=self._stop,
                on_transition=lambda state: self.log.info(
                    "Spark application %s: %s", app.application_id, state.describe()
                ),
                on_look=self._metrics_of_look(app),
                window_seconds=math.ceil(self.poll_interval),
            )
        assert step.final is not None  # follow_application returns the step that ends
        return step.final

    def _metrics_of_look(self, app: TrackedApplication) -> OnLook | None:
        """The worker-side wait's metrics, the trigger's own (application/metrics.py)."""
        metrics = airflow_metrics()
        if not metrics.enabled:
            return None
        tags = task_tags(app.namespace, self.dag_id, self.task_id)

        def on_look(before: ApplicationState | None, step: Step) -> None:
            send(metrics, look_metrics(before, step, app.driver_container), tags)

        return on_look

    # ------------------------------------------------------------------ completion

    def execute_complete(
        self,
        context: Any,
        event: Mapping[str, Any] | None = None,
        application: Mapping[str, Any] | None = None,
        driver_memory: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        ti = context["ti"]
        if application is None:  # dag.test() resumes with the event only
            application = ti.xcom_pull(
                task_ids=ti.task_id, key=APPLICATION_XCOM_KEY, map_indexes=ti.map_index
            )
        app = TrackedApplication.from_kwargs(application) if application else None
        # The trigger streamed the driver log, unless its event never came.
        streamed = self.deferrable and self.get_logs
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
            app, event = self._resume_without_event(context, app, event)
            streamed = False
        self._tracked = app
        if self.link_urls is None:  # resumed in a new process
            self._resume_ui_base(context)
            self.link_urls = self._link_urls(app)
        with self._driver_pods(self._hook()) as pods:
            if needs_driver_exception(event):
                exception = completion.driver_exception(pods, app, self.log)
                if exception:
                    event = {**event, "driver_exception": exception}
            outcome = report(app, event, datetime.now(UTC))
            outcome.xcom["spark_version"] = self.spark_line().version
            outcome.xcom["driver_memory"] = dict(driver_memory) if driver_memory else None
            memory_raised = bool(driver_memory and "raised_from" in driver_memory)
            keep_for_retry = self._keep_for_memory_retry(outcome.kind, memory_raised, ti)
            if self.get_logs and not streamed and event.get("state") != "unknown":
                completion.log_driver_tail(pods, app, self.log_tail_lines, self.log)
            application_xcom = {**app.to_kwargs(), **outcome.xcom}
            ti.xcom_push(key=APPLICATION_XCOM_KEY, value=application_xcom)
            if outcome.succeeded:  # kept until Airflow records the success
                ref = TaskInstanceRef.from_context(context)
                if keep_result(pods, ref, app.namespace, application_xcom, outcome.xcom, self.log):
                    self._result_kept = (app.namespace, ref)
            if keep_for_retry:
                self.log.info(
                    "Keeping driver pod %s: it ran out of memory, and the retry reads it",
                    app.submission_id,
                )
            elif should_delete_driver(self.on_finish_action, event):
                self.log.info(
                    "Deleting driver pod %s (%s)",
                    app.submission_id,
                    deletion_reason(self.on_finish_action, event),
                )
                self._delete_driver(pods, app)
            else:
                self.log.info(
                    "Keeping driver pod %s (%s)", app.submission_id, self.on_finish_action
                )
        completion.warn_of_history_server(
            self._connection_or_config(HISTORY_SERVER_URL_OPTION), self.log
        )
        self._push_run_summary(ti, app, event)
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

    def _push_run_summary(self, ti: Any, app: TrackedApplication, event: Mapping[str, Any]) -> None:
        """The run summary from the History Server, into the task log and XCom
        `run_summary`, when the driver ran with an event log and a server is configured.
        Never fails the task: the application's outcome is decided already."""
        if not self.run_summary or not run_summary.worth_reading(event):
            return
        if not event_log.enabled(self._spark_conf_logged()):
            return
        url = self._connection_or_config(HISTORY_SERVER_URL_OPTION)
        if url is None:
            self.log.info(
                "No run summary: the event log is on, but no History Server is configured "
                "(history_server_url on connection %r or in [sparkk8s])",
                self.kubernetes_conn_id,
            )
            return
        try:
            summary = read_run_summary(url_fetcher(url), app.application_id)
        except Exception as error:  # noqa: BLE001 - a summary is a convenience
            self.log.warning("No run summary of %s: %s", app.application_id, error)
            return
        self.log.info("%s", run_summary.table(summary))
        ti.xcom_push(key=run_summary.XCOM_KEY, value=summary.to_xcom())

    def _spark_conf_logged(self) -> dict[str, Any]:
        """`conf` with the event log keys it was submitted with (a resume has no plan)."""
        return event_log.with_event_log(self.conf, self._event_log())

    def _connection_or_config(self, option: str) -> str | None:
        """The connection's extra `option`, else `[sparkk8s] option` (None when empty)."""
        extras = self._connection_extras()
        for value in (extras.get(option), airflow_conf.get(CONFIG_SECTION, option, fallback=None)):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage's extractor asks when the task ends: the `sparkk8s_cost` run facet."""
        return openlineage.cost_lineage(self._cost)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return openlineage.cost_lineage(self._cost)

    def _keep_for_memory_retry(self, kind: str, memory_raised: bool, ti: Any) -> bool:
        """An out-of-memory driver stays for the retry that raises the memory (the retry's
        only way to know: XCom is cleared between tries), when one can follow."""
        retries_left = int(getattr(ti, "try_number", 1) or 1) <= int(
            getattr(ti, "max_tries", 0) or 0
        )
        return (
            kind == "out_of_memory"
            and not memory_raised
            and self._memory_factor() is not None
            and retries_left
        )

    def _resume_without_event(
        self, context: Any, app: TrackedApplication | None, event: Any
    ) -> tuple[TrackedApplication, Mapping[str, Any]]:
        """The trigger's event is missing or partial (the process that ran the trigger was
        killed, and the task instance runs again): find the driver, then report it or follow
        it again (`application.resume` decides)."""
        self.log.warning(
            "Resumed without the trigger's final event (got %r); looking the driver up", event
        )
        ref = TaskInstanceRef.from_context(context)
        self._try_number = ref.try_number
        hook = self._hook()
        with self._driver_pods(hook) as pods:
            if app is not None:
                app_pods = pods.list_pods(app.namespace, application_selector(app.application_id))
                decision = decide_resume(app, app_pods, ())
            else:
                namespace = namespace_of(self.namespace, self.conf) or hook.get_namespace()
                decision = decide_resume(None, (), self._list_drivers(pods, ref, namespace))
        if isinstance(decision, Missing):
            raise ApplicationFailed(f"Task {ref.task_id}: {decision.reason}")
        if isinstance(decision, Finished):
            self.log.info("Driver %s has finished: reporting it", decision.app.submission_id)
            return decision.app, decision.event
        found = decision.app
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
            self._delete_driver(pods, app, why="task killed", kill_of_try=self._try_number)

    def _delete_driver(
        self,
        pods: DriverPods,
        app: TrackedApplication,
        why: str = "",
        kill_of_try: int | Unguarded | None = UNGUARDED,
    ) -> None:
        """The driver pod and, unless keep_uploaded_files, what its submission uploaded; a
        kill (`kill_of_try`) spares a driver a newer try owns."""
        completion.delete_driver(
            pods,
            app,
            self._upload_storage(),
            self.conf,
            keep_uploads=self.keep_uploaded_files,
            log=self.log,
            why=why,
            kill_of_try=kill_of_try,
        )

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
        app = TrackedApplication.from_kwargs(stored)
        self._tracked = app
        now = datetime.now(UTC)
        message = (
            f"{limit} passed while deferred: Spark application {app.application_id} "
            f"(driver pod {app.submission_id}) ran for {ran_for(app.submitted_at, now)} and "
            "was deleted"
        )
        with self._driver_pods(self._hook()) as pods:
            self._delete_driver(pods, app, why="execution_timeout")
        ti.xcom_push(
            key=APPLICATION_XCOM_KEY,
            value={
                **app.to_kwargs(),
                "status": "failed",
                "reason": "ExecutionTimeout",
                "message": message,
            },
        )
        raise TaskDeferralTimeout(message)


def _api_base_url() -> str:
    return airflow_conf.get("api", "base_url", fallback="") or ""


def _task_ui(ref: TaskInstanceRef) -> TaskInstanceUi:
    """The task instance's Spark UI path, under the path Airflow is served at."""
    root = root_path(_api_base_url())
    return TaskInstanceUi(ref.dag_id, ref.run_id, ref.task_id, ref.map_index, root=root)


def _listed_first(
    drivers: Sequence[Pod], relist: Callable[[], Sequence[Pod]]
) -> Callable[[], Sequence[Pod]]:
    """The drivers listed already (the memory retry read them), then fresh lists: the
    adoption's first decision costs no second request."""
    pending = [drivers]
    return lambda: pending.pop() if pending else relist()


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
