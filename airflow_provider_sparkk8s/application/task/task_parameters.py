"""The operator's own parameters (not SparkSubmitOperator's), in a few typed groups.

A DAG still passes every one as a plain keyword (the operator's signature keeps them all, so
`default_args`, `partial` and `expand` see them); the operator collects them into these
groups, and the task run (`services.task.task_run`) reads the groups instead of 20 loose
attributes. The templated ones (`namespace`, `image`, the pod templates, `event_log_dir`)
stay attributes of the operator: Airflow renders attributes in place.
Pure: values in, checked values out.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow_provider_sparkk8s.application.following.timeouts import (
    limit_text,
    shadowed_timeouts,
    timeout_seconds,
)
from airflow_provider_sparkk8s.application.task.outcome import ON_FINISH_ACTIONS
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record

# The parameters Airflow renders, the operator's and SparkSubmitOperator's: the operator's
# template fields, and those the worker-free trigger renders in the triggerer.
TEMPLATED_PARAMETERS = (
    "application", "conf", "files", "py_files", "archives", "jars", "application_args",
    "name", "namespace", "image", "driver_pod_template", "executor_pod_template",
    "java_class", "driver_class_path", "env_vars", "proxy_user", "keytab", "principal",
    "properties_file", "event_log_dir",
)  # fmt: skip


@record
class Following:
    """How the task follows its driver, and what it does at the end.

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
    :param get_logs: bring the driver log into the task log.
    :param log_tail_lines: how many last lines of the driver log a worker-side wait copies.
    :param reattach_on_restart: adopt this task instance's live driver instead of submitting
        again (otherwise the live one is deleted and a new one submitted).
    :param on_finish_action: ``delete_pod``, ``delete_succeeded_pod`` (keep it on failure)
        or ``keep_pod``. A timed-out driver is always deleted.
    """

    poll_interval: float = 5.0
    startup_timeout: float | None = 600.0
    run_timeout: float | None = None
    get_logs: bool = True
    log_tail_lines: int = 100
    reattach_on_restart: bool = True
    on_finish_action: str = "delete_succeeded_pod"

    def __post_init__(self) -> None:
        if self.on_finish_action not in ON_FINISH_ACTIONS:
            raise SparkConfError(
                "on_finish_action", self.on_finish_action, " or ".join(ON_FINISH_ACTIONS)
            )

    def trigger_settings(self) -> dict[str, Any]:
        """SparkK8sApplicationTrigger's keywords this group sets."""
        return {
            "startup_timeout": self.startup_timeout,
            "run_timeout": self.run_timeout,
            "stream_logs": self.get_logs,
        }

    def shadowed_by(self, execution_timeout: timedelta | None) -> list[str]:
        """A warning for each timeout that execution_timeout always ends first."""
        return [
            f"{name}={getattr(self, name):g}s never fires: execution_timeout="
            f"{limit_text(execution_timeout)} ends the try first (it counts from the try's "
            "start, and fails the task without the driver's state); set "
            f"{name} below it to fail with the driver's reason"
            for name in shadowed_timeouts(self.startup_timeout, self.run_timeout, execution_timeout)
        ]

    @staticmethod
    def of(
        poll_interval: float,
        status_poll_interval: float | None,
        startup_timeout: float | timedelta | None,
        run_timeout: float | timedelta | None,
        get_logs: bool,
        log_tail_lines: int,
        reattach_on_restart: bool,
        on_finish_action: str,
    ) -> Following:
        """The parameters as given: SparkSubmitOperator's `status_poll_interval` means
        `poll_interval`; a timeout may be a timedelta."""
        return Following(
            poll_interval=float(status_poll_interval or poll_interval),
            startup_timeout=timeout_seconds("startup_timeout", startup_timeout),
            run_timeout=timeout_seconds("run_timeout", run_timeout),
            get_logs=get_logs,
            log_tail_lines=log_tail_lines,
            reattach_on_restart=reattach_on_restart,
            on_finish_action=on_finish_action,
        )


@record
class Uploads:
    """Where the local files go, and whether they outlive the driver.

    :param upload_conn_id: the connection for the upload path's storage (through Airflow's
        ObjectStoragePath where a provider maps it; an ``aws`` connection also without the
        amazon provider). None: the ``spark.hadoop.fs.s3a.*`` keys and the environment.
    :param keep_uploaded_files: keep the uploaded files when ``on_finish_action`` deletes the
        driver (by default they go with it).
    """

    upload_conn_id: str | None = None
    keep_uploaded_files: bool = False

    def trigger_settings(self) -> dict[str, Any]:
        """SparkK8sApplicationTrigger's keywords this group sets (for the kill's removal)."""
        return {
            "upload_conn_id": self.upload_conn_id,
            "keep_uploaded_files": self.keep_uploaded_files,
        }


@record
class Reporting:
    """The Spark UI and the History Server.

    :param spark_ui_proxy: serve the live Spark UI through Airflow (docs/spark_ui.md): sets
        ``spark.ui.proxyBase`` to the task instance's path under the provider's plugin
        (unless ``conf`` sets it, or ``spark.ui.reverseProxy``) and publishes where the
        driver's UI is (XCom ``spark_ui``). False: Spark's own links (a port-forward).
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

    spark_ui_proxy: bool = True
    event_log_rolling_max_file_size: str | None = None
    run_summary: bool = True


@record
class Lineage:
    """OpenLineage's keys in the Spark conf, as SparkSubmitOperator injects them: the
    defaults come from ``[openlineage] spark_inject_parent_job_info`` and
    ``spark_inject_transport_info``; the openlineage provider's own helpers write the keys;
    without that provider nothing changes."""

    openlineage_inject_parent_job_info: bool = False
    openlineage_inject_transport_info: bool = False


@record
class Ignored:
    """SparkSubmitOperator's Spark connection, binary and YARN queue: no role on Kubernetes,
    accepted so its tasks move over unchanged."""

    conn_id: str | None = None
    spark_binary: str | None = None
    yarn_queue: str | None = None

    def warning(self, kubernetes_conn_id: str) -> str | None:
        """The one warning a task that still sets them gets."""
        given = ", ".join(
            f"{name}={value!r}"
            for name, value in (
                ("conn_id", self.conn_id),
                ("spark_binary", self.spark_binary),
                ("yarn_queue", self.yarn_queue),
            )
            if value
        )
        if not given:
            return None
        return (
            f"Ignoring {given}: there is no spark-submit and no Spark connection here. The "
            f"spark_k8s connection kubernetes_conn_id={kubernetes_conn_id!r} gives the master "
            "(its API server) and the default namespace (or set namespace=); Kubernetes has no "
            "YARN queue."
        )


def refuse_krb5ccache(use_krb5ccache: bool) -> None:
    """SparkSubmitOperator's ticket cache: there is none in a driver pod."""
    if use_krb5ccache:
        raise SparkConfError(
            "use_krb5ccache", use_krb5ccache, "False", "give keytab and principal instead"
        )
