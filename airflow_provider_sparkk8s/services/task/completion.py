"""After the driver ends: its log's tail and exception line, its deletion with its uploads,
and the History Server's known vulnerabilities (the task run's last phase, `task_run`).

The reads and the uploads' removal are best effort: the application's result stands
whatever they meet, so a failure becomes a warning in the task log. Every path of the
operator that deletes its driver (the end, a kill, execution_timeout) calls `delete_driver`.
No Airflow: the upload storage comes in as its `remove` (the upload storage hook's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.ui import history_advisories
from airflow_provider_sparkk8s.monitoring.driver_failure import TAIL_LINES, exception_line
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.submit import driver_removal
from airflow_provider_sparkk8s.services.ui.history_server import (
    FetchJson,
    read_spark_version,
    url_fetcher,
)

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log


def driver_exception(pods: DriverPods, app: TrackedApplication, log: Log) -> str | None:
    """The exception line at the end of a failed driver's log (its pod has no message)."""
    try:
        text = pods.log_tail(app.namespace, app.driver_pod, app.driver_container, TAIL_LINES)
    except Exception as error:  # noqa: BLE001 - the failure is reported without it
        log.warning("Could not read the driver log of %s: %s", app.submission_id, error)
        return None
    return exception_line(text.splitlines())


def log_driver_tail(pods: DriverPods, app: TrackedApplication, lines: int, log: Log) -> None:
    """The last `lines` lines of the driver log, into the task log."""
    try:
        text = pods.log_tail(app.namespace, app.driver_pod, app.driver_container, lines)
    except Exception as error:  # noqa: BLE001 - a missing log must not hide the application's result
        log.warning("Could not read the driver log of %s: %s", app.submission_id, error)
        return
    tail = text.splitlines()
    log.info("Last %d lines of the driver log (%s):", len(tail), app.submission_id)
    for line in tail:
        log.info("[driver] %s", line)


def delete_driver(
    pods: DriverPods,
    app: TrackedApplication,
    remove_uploads: driver_removal.RemoveUploads,
    spark_conf: Mapping[str, str],
    *,
    keep_uploads: bool,
    log: Log,
    why: str = "",
    kill_of_try: int | driver_removal.Unguarded | None = driver_removal.UNGUARDED,
) -> bool:
    """Delete the driver pod and the files its submission uploaded (unless `keep_uploads`);
    `spark_conf`: the conf the upload storage (`remove_uploads`) is read from. False when
    the pod was gone, or a kill (`kill_of_try`) spared it for the newer try that owns it."""
    return driver_removal.delete_driver(
        pods,
        app.namespace,
        app.driver_pod,
        remove_uploads=remove_uploads,
        log=log,
        uploads=driver_removal.Uploads(app.uploaded_dirs, spark_conf),
        keep_uploads=keep_uploads,
        why=why,
        kill_of_try=kill_of_try,
    )


VERSION_READ_SECONDS = 5.0


def warn_of_history_server(url: str | None, log: Log, fetch: FetchJson | None = None) -> None:
    """One warning naming the History Server's known vulnerabilities, from the version its
    REST API reports; nothing when none is configured, it does not answer, or it is fixed."""
    if url is None:
        return
    version = read_spark_version(fetch or url_fetcher(url, VERSION_READ_SECONDS))
    issues = history_advisories.known_issues(version)
    if version is not None and issues:
        log.warning("%s", history_advisories.warning(url, version, issues))
