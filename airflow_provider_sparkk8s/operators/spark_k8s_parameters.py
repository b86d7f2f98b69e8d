"""SparkK8sSubmitOperator's parameters, declared once: the signature, the templated fields,
the typed groups, and what the task run takes from them.

Two signatures, each a keyword list Airflow's `default_args`, `partial` and `expand` see
(its metaclass applies defaults to every class's `__init__`), so a DAG passes every
parameter flat, as before: SparkSubmitOperator's (`spark_submit_arguments.py`), and here the
operator's own. Its templated ones stay attributes; the rest go into the typed groups of
`application/task/task_parameters.py`. `SparkK8sSubmitOperator` (operators/spark_k8s.py)
documents each parameter and does the work.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from datetime import timedelta
from typing import Any, ClassVar

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.task.task_parameters import (
    TEMPLATED_PARAMETERS,
    Following,
    Reporting,
    Uploads,
)
from airflow_provider_sparkk8s.application.task.worker_free import (
    check_worker_free,
    refuse_airflow,
    refuse_without_adoption,
)
from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget
from airflow_provider_sparkk8s.application.ui.spark_ui_access import SERIALIZED_CONN_FIELD
from airflow_provider_sparkk8s.environment import hidden
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.operators import openlineage
from airflow_provider_sparkk8s.operators.spark_submit_arguments import SparkSubmitArguments
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services.task.task_prepare import (
    HOW_TO_SET_THE_LINE,
    ConfAdditions,
    RunRequest,
)
from airflow_provider_sparkk8s.submission.spark_line import (
    SparkLine,
    choose_spark_line,
    driver_image,
)
from airflow_provider_sparkk8s.triggers.worker_free_end import (
    check_dag_jinja,
    checked_dag,
    start_args,
)
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_VERSION,
    RETRY_POLICIES,
    START_FROM_TRIGGER_RENDERS,
    BaseOperator,
)
from airflow_provider_sparkk8s.version_compat import conf as airflow_conf

SUBMIT_TRIGGER = "airflow_provider_sparkk8s.triggers.spark_k8s_submit.SparkK8sSubmitTrigger"
LINEAGE_SWITCHES = ("openlineage_inject_parent_job_info", "openlineage_inject_transport_info")
# Why a worker-free task refuses these: each needs the task's code in a worker.
WORKER_ONLY = {
    "dry_run": "a dry run logs the objects from a worker; run it with start_from_trigger=False",
    **dict.fromkeys(
        LINEAGE_SWITCHES,
        "OpenLineage's helpers read the task's context in a worker; the triggerer injects none",
    ),
}


class SparkK8sSubmitParameters(SparkSubmitArguments):
    """The parameters of `SparkK8sSubmitOperator`, whose docstring documents each."""

    template_fields: Sequence[str] = TEMPLATED_PARAMETERS
    # template_ext: pod template files (operators/template_files.py).
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

    @classmethod
    def get_serialized_fields(cls) -> frozenset[str]:
        """Airflow's fields and template fields, and the connection: the Spark UI plugin
        reads it from the serialized DAG in the api-server, never from an XCom (issue 44;
        Airflow's ExternalTaskMarker adds its `recursion_depth` the same way)."""
        return frozenset(super().get_serialized_fields() | {SERIALIZED_CONN_FIELD})

    def __init__(
        self,
        *,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        namespace: str | None = None,
        image: str | None = None,
        spark_version: str | None = None,
        driver_pod_template: str | Mapping[str, Any] | None = None,
        executor_pod_template: str | Mapping[str, Any] | None = None,
        deferrable: bool | None = None,
        poll_interval: float = 5.0,
        status_poll_interval: float | None = None,
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
        openlineage_inject_parent_job_info: bool | None = None,
        openlineage_inject_transport_info: bool | None = None,
        start_from_trigger: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**_with_provider_callbacks(kwargs))
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
        self.following = Following.of(
            poll_interval, status_poll_interval, startup_timeout, run_timeout, get_logs,
            log_tail_lines, reattach_on_restart, on_finish_action,
        )  # fmt: skip
        self.uploads = Uploads(upload_conn_id, keep_uploaded_files)
        self.reporting = Reporting(spark_ui_proxy, event_log_rolling_max_file_size, run_summary)
        self.lineage = openlineage.switches(
            openlineage_inject_parent_job_info, openlineage_inject_transport_info
        )
        self._reset_run_state()
        lineage_asked = (openlineage_inject_parent_job_info, openlineage_inject_transport_info)
        self._start_in_triggerer(start_from_trigger, lineage_asked)

    def _start_in_triggerer(self, start_from_trigger: bool, lineage_asked: tuple[Any, ...]) -> None:
        """`start_from_trigger=True`: Airflow 3.3 defers the task straight to the triggerer,
        where `SparkK8sSubmitTrigger` runs all of it. What needs a worker is refused here,
        when the DAG is parsed (`application/task/worker_free.py`)."""
        self.start_from_trigger = start_from_trigger
        if not start_from_trigger:
            return
        refuse_airflow(str(AIRFLOW_VERSION), START_FROM_TRIGGER_RENDERS)
        refuse_without_adoption(self.following.reattach_on_restart)
        for name, value in (
            ("dry_run", self.render_only),
            *zip(LINEAGE_SWITCHES, lineage_asked, strict=True),
        ):
            if value:
                raise SparkConfError(
                    name, value, "False", f"start_from_trigger=True: {WORKER_ONLY[name]}"
                )
        kwargs = self._trigger_kwargs()
        check_worker_free(kwargs)
        check_dag_jinja(self)
        self.start_trigger_args = start_args(SUBMIT_TRIGGER, kwargs, self.execution_timeout)

    # A DAG given after __init__ is checked as one given to it (`check_dag_jinja`).
    dag = checked_dag(BaseOperator.dag)

    def _trigger_kwargs(self) -> dict[str, Any]:
        """The task's parameters as the trigger takes them: plain data, no secrets (the
        trigger reads the connections in the triggerer)."""
        from airflow_provider_sparkk8s.triggers.spark_k8s_submit import OWN_PARAMETERS

        submitted = self._submit_parameters()
        given = {field.name: getattr(submitted, field.name) for field in fields(submitted)}
        factor = getattr(getattr(self, "retry_policy", None), "memory_factor", None)
        return {
            "kubernetes_conn_id": self.kubernetes_conn_id,
            "following": asdict(self.following),
            "uploads": asdict(self.uploads),
            "reporting": asdict(self.reporting),
            "memory_factor": float(factor) if isinstance(factor, (int, float)) else None,
            **given,
            "conf": dict(submitted.conf),
            **{name: getattr(self, name) for name in OWN_PARAMETERS},
        }

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

    def spark_line(self) -> SparkLine:
        """The Spark release whose objects are built (given, else the image tag's), for a
        driver whose submission left no record (`_recorded`)."""
        return choose_spark_line(
            self.spark_version,
            driver_image(dict(self.conf), self.image),
            how_to_set=HOW_TO_SET_THE_LINE,
        )

    def result_delivered(self, context: Any) -> None:
        """The success callback, once Airflow recorded the success: the operator drops the
        result it kept there."""

    def _run_request(
        self,
        conf: Mapping[str, Any],
        additions: ConfAdditions,
        master: str,
        namespace: str,
        policy: Policy | None,
    ) -> RunRequest:
        """The rendered parameters as the task run takes them; relative paths point at the
        DAG file's folder."""
        fileloc = getattr(getattr(self, "dag", None), "fileloc", None) if self.has_dag() else None
        return RunRequest(
            parameters=self._submit_parameters(conf),
            master=master,
            namespace=namespace,
            cwd=os.path.dirname(os.path.abspath(fileloc)) if fileloc else os.getcwd(),
            environ=hidden(os.environ),
            image=self.image,
            spark_version=self.spark_version,
            driver_pod_template=self.driver_pod_template,
            executor_pod_template=self.executor_pod_template,
            policy=policy,
            additions=additions,
        )


def _with_provider_callbacks(kwargs: dict[str, Any]) -> dict[str, Any]:
    """BaseOperator's arguments with the provider's retry policy (unless the task sets one)
    and its success callback added."""
    if RETRY_POLICIES and kwargs.get("retry_policy") is None:
        # Application errors fail at once, infrastructure is retried: the same rule as on
        # Airflow 3.0-3.2 (AirflowFailException), where there are no policies.
        from airflow_provider_sparkk8s.operators.retry_policy import SparkK8sRetryPolicy

        kwargs["retry_policy"] = SparkK8sRetryPolicy()
    # Airflow runs success callbacks once the success is recorded: a kept result's
    # record is dropped there (`application.task.delivery`).
    kwargs["on_success_callback"] = [
        *_callbacks(kwargs.get("on_success_callback")),
        _result_delivered,
    ]
    return kwargs


def _callbacks(given: Any) -> list[Any]:
    """A task's callbacks as a list (Airflow takes one, a list, or None)."""
    if given is None:
        return []
    return list(given) if isinstance(given, (list, tuple)) else [given]


def _result_delivered(context: Any) -> None:
    task = context.get("task")
    if isinstance(task, SparkK8sSubmitParameters):
        task.result_delivered(context)
