"""The run summary read from a Spark History Server's REST API, after the driver ends
(docs/spark_ui.md). The numbers are application/ui/run_summary.py's; here is only the reading.

The History Server lists an application once it has rescanned the event log folder after
the driver's last event (`spark.history.fs.update.interval`, 10 s by default): the reader
waits for the application to show as completed, up to a deadline, then summarizes what
the server has (an application still listed as in progress is summarized as it is).

Plain HTTP to a URL the workers reach (a Service's cluster address, an ingress): the
History Server is not the API server, so the kube client is not the one to call it.
`read_summary` is the task run's: the summary of an ended driver for the task log, never a
failure of the task.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.ui.run_summary import (
    TASK_QUANTILES,
    RunSummary,
    last_attempt_id,
    slowest_stage,
    summarize,
    table,
    worth_reading,
)

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log

FetchJson = Callable[[str], Any]
DEFAULT_WAIT_SECONDS = 60.0
_REQUEST_SECONDS = 10.0


class HistoryUnavailable(Exception):
    """The History Server did not answer, or does not know the application."""


def url_fetcher(base_url: str, timeout: float = _REQUEST_SECONDS) -> FetchJson:
    """GET `<base_url>/api/v1/<path>` as JSON (the History Server's REST API)."""
    root = base_url.rstrip("/") + "/api/v1/"

    def fetch(path: str) -> Any:
        request = urllib.request.Request(root + path, headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())

    return fetch


def read_spark_version(fetch: FetchJson) -> str | None:
    """The Spark version the History Server reports (`GET /api/v1/version`), or None when
    it does not answer or answers something else: the caller's check is advisory."""
    try:
        answer = fetch("version")
    except (OSError, ValueError):  # unreachable, an HTTP error, not JSON
        return None
    version = answer.get("spark") if isinstance(answer, dict) else None
    return version if isinstance(version, str) and version.strip() else None


def _completed(application: Any) -> bool:
    attempts = application.get("attempts") if isinstance(application, dict) else None
    return (
        isinstance(attempts, list)
        and bool(attempts)
        and all(isinstance(a, dict) and a.get("completed") for a in attempts)
    )


def wait_for_application(
    fetch: FetchJson,
    app_id: str,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The application's entry once completed, or as it is at the deadline."""
    deadline = clock() + wait_seconds
    path = "applications/" + quote(app_id, safe="")
    seen: Any = None
    last_error: Exception | None = None
    while True:
        try:
            seen = fetch(path)
            if _completed(seen):
                return dict(seen)
        except (OSError, ValueError) as error:  # not listed yet (404), or not up yet
            last_error = error
        if clock() >= deadline:
            break
        sleep(min(2.0, max(0.0, deadline - clock())))
    if isinstance(seen, dict):
        return seen
    raise HistoryUnavailable(
        f"the History Server does not list application {app_id} after {wait_seconds:.0f} s"
        + (f" ({last_error})" if last_error else "")
    )


def read_run_summary(
    fetch: FetchJson,
    app_id: str,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RunSummary:
    """Waits for the application, then reads its jobs, stages, executors and the slowest
    stage's task quantiles."""
    application = wait_for_application(fetch, app_id, wait_seconds, clock, sleep)
    attempt = last_attempt_id(application)
    base = "applications/" + quote(app_id, safe="") + (f"/{quote(attempt)}" if attempt else "")
    try:
        jobs = fetch(base + "/jobs")
        stages = fetch(base + "/stages")
        executors = fetch(base + "/allexecutors")
        slowest = slowest_stage(stages)
        task_summary = (
            fetch(
                f"{base}/stages/{slowest.stage_id}/{slowest.attempt_id}/taskSummary"
                f"?quantiles={TASK_QUANTILES}"
            )
            if slowest is not None
            else None
        )
    except (OSError, ValueError) as error:
        raise HistoryUnavailable(f"reading application {app_id}: {error}") from error
    return summarize(application, jobs, stages, executors, task_summary)


def read_summary(
    url: str | None,
    app: TrackedApplication,
    event: Mapping[str, Any],
    log: Log,
    *,
    conn_id: str,
) -> RunSummary | None:
    """The run summary from the History Server at `url`, logged as a table, when the driver
    ran with an event log. Never fails the task: the application's outcome is decided
    already (a failure to read it only warns)."""
    if not worth_reading(event) or not app.event_log:
        return None
    if url is None:
        log.info(
            "No run summary: the event log is on, but no History Server is configured "
            "(history_server_url on connection %r or in [sparkk8s])",
            conn_id,
        )
        return None
    try:
        summary = read_run_summary(url_fetcher(url), app.application_id)
    except Exception as error:  # noqa: BLE001 - a summary is a convenience
        log.warning("No run summary of %s: %s", app.application_id, error)
        return None
    log.info("%s", table(summary))
    return summary
