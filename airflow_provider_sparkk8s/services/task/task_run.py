"""One task instance's run of its Spark application, phase by phase: Spark's `Client.run`.

The operator makes one call per phase and keeps Airflow's part (parameters, templating,
deferral, XCom, links, the kill):
- `prepare` (services/task/task_prepare.py): the task's parameters as spark-submit's command
  line, parsed once, with the Spark line chosen once and the conf amended in one place;
- `TaskRun.start`: an earlier try's kept result, else the out-of-memory retry's sizes, then
  adopt the task instance's live driver or submit (`task_submission.adopt_or_submit`); the
  application it returns records what the submission decided (the Spark line, the event
  log, Kueue's queue timeout), and every later phase reads that record;
- `TaskRun.wait`: follow the pods in the worker until the follower's final step;
- `TaskRun.finish`: the driver's exception line, the report, the log tail, the result kept
  for Airflow's record, the driver kept or deleted; `completion.read_summary`: the run
  summary;
- `TaskRun.fail_on_timeout`: execution_timeout passed while deferred: the driver goes;
- `TaskRun.resume`: the trigger's final event is missing: report the driver or follow it.
What to do is decided in `application/` (memory_retry, outcome, resume, run_summary); this
module does the I/O those decisions ask for, through the pods service.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.application.following.follower import FollowSpec, Step
from airflow_provider_sparkk8s.application.following.timeouts import ran_for
from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
    NO_METRICS,
    MetricsSink,
    look_metrics,
    send,
    task_tags,
)
from airflow_provider_sparkk8s.application.task.delivery import Undelivered
from airflow_provider_sparkk8s.application.task.memory_retry import (
    keep_for_retry,
    memory_xcom,
    out_of_memory_drivers,
    planned_memory,
    raised,
)
from airflow_provider_sparkk8s.application.task.outcome import (
    Report,
    deletion_reason,
    needs_driver_exception,
    report,
    should_delete_driver,
)
from airflow_provider_sparkk8s.application.task.resume import (
    Finished,
    Follow,
    Missing,
    decide_resume,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef, selector
from airflow_provider_sparkk8s.application.task.task_parameters import Following, Uploads
from airflow_provider_sparkk8s.application.ui import event_log
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.following.follow_runs import OnLook, follow_application
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods, application_selector
from airflow_provider_sparkk8s.services.submit.driver_removal import (
    UNGUARDED,
    RemoveUploads,
    Unguarded,
    delete_driver,
)
from airflow_provider_sparkk8s.services.submit.submission import StorageFor
from airflow_provider_sparkk8s.services.task import completion
from airflow_provider_sparkk8s.services.task.result_delivery import keep_result, kept_result
from airflow_provider_sparkk8s.services.task.task_prepare import RunRequest, prepare
from airflow_provider_sparkk8s.services.task.task_submission import adopt_or_submit
from airflow_provider_sparkk8s.submission.kueue import queue_timeout_seconds

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log


@record
class Started:
    """A driver to follow: submitted or adopted, with the record of its submission, and
    the XCom's `driver_memory`."""

    app: TrackedApplication
    submitted_conf: Mapping[str, str]
    driver_memory: dict[str, Any]


@record
class KeptResult:
    """An earlier try's application succeeded and Airflow never recorded it: deliver that
    result, do not run the application again."""

    namespace: str
    kept: Undelivered
    submitted_conf: Mapping[str, str]


@record
class Ended:
    """What `finish` reported, and whether the result is kept until Airflow records it."""

    report: Report
    memory_raised: bool
    result_kept: bool


def recorded(
    app: TrackedApplication, spark_version: str, submitted_conf: Mapping[str, str]
) -> TrackedApplication:
    """`app` with what its submission decided, read from the conf it was submitted with."""
    return replace(
        app,
        spark_version=spark_version,
        event_log=event_log.enabled(submitted_conf),
        queue_timeout=queue_timeout_seconds(submitted_conf),
    )


@record
class TaskRun:
    """One task instance's phases over one pods service (the operator opens one per phase)."""

    pods: DriverPods
    following: Following
    uploads: Uploads
    # The conf the upload storage is read from when a driver goes: the task's `conf`.
    uploads_conf: Mapping[str, Any]
    storage_for: StorageFor
    remove_uploads: RemoveUploads
    log: Log
    metrics: MetricsSink = NO_METRICS
    memory_factor: float | None = None  # the retry policy's, when it raises memory
    # A success's result record (`application.task.delivery`): the worker-free trigger keeps
    # none, as no worker's success callback would drop it.
    keep_results: bool = True

    def start(self, request: RunRequest, ref: TaskInstanceRef) -> Started | KeptResult:
        """Deliver a kept result, or adopt the live driver, or submit; a retry after an
        out-of-memory driver submits with the memory raised."""
        task = prepare(request, ref, self.log)
        first = task.plan(1)  # before any request: bad input fails here, nothing sent
        namespace = first.rendered.namespace
        kept = kept_result(self.pods, ref, namespace, self.log)
        if kept is not None:
            return KeptResult(namespace, kept, first.spark_conf)
        drivers = self._drivers(ref, namespace)
        memory = planned_memory(first.spark_conf, first.rendered.driver_pod, task.spark_version)
        before, oom_drivers = None, out_of_memory_drivers(drivers)
        if self.memory_factor is not None and oom_drivers:  # this try is the memory retry
            before, memory = memory, raised(memory, self.memory_factor)
            self.log.info(
                "Driver %s ran out of memory: submitting with %s (was %s)",
                oom_drivers[-1],
                memory.describe(),
                before.describe(),
            )
            task = prepare(request, ref, self.log, memory)
            first = task.plan(1)
        app = adopt_or_submit(
            self.pods,
            task,
            first,
            _listed_first(drivers, lambda: self._drivers(ref, namespace)),
            reattach=self.following.reattach_on_restart,
            storage_for=self.storage_for,
            log=self.log,
            remove_uploads=self.remove_uploads,
            metrics=self.metrics,
        )
        if before is not None and self.following.on_finish_action == "delete_pod":
            for name in oom_drivers:  # kept for this retry only (see `finish`)
                self._delete(app.namespace, name, why="read for the memory retry")
        app = recorded(app, task.spark_version, first.spark_conf)
        return Started(app, first.spark_conf, memory_xcom(memory, before, self.memory_factor))

    def _drivers(self, ref: TaskInstanceRef, namespace: str) -> list[Pod]:
        """Every driver pod this task instance ever submitted (any state)."""
        return self.pods.list_pods(namespace, selector(ref))

    def wait(
        self, app: TrackedApplication, stop: threading.Event, task: tuple[str, str]
    ) -> dict[str, Any]:
        """Follow the application's pods by watch until the follower ends it (the trigger's
        rules); the clock is read at least every poll_interval. `task`: (DAG id, task id),
        the metrics' tags."""
        spec = FollowSpec(
            app.application_id,
            app.namespace,
            app.driver_pod,
            app.driver_container,
            start_time=datetime.fromisoformat(app.submitted_at).timestamp(),
            startup_timeout=self.following.startup_timeout,
            run_timeout=self.following.run_timeout,
            queue_timeout=app.queue_timeout,
        )

        def on_transition(state: ApplicationState) -> None:
            self.log.info("Spark application %s: %s", app.application_id, state.describe())

        step = follow_application(
            self.pods,
            spec,
            stop=stop,
            on_transition=on_transition,
            on_look=self._metrics_of_look(app, task),
            window_seconds=math.ceil(self.following.poll_interval),
        )
        assert step.final is not None  # follow_application returns the step that ends
        return step.final

    def _metrics_of_look(self, app: TrackedApplication, task: tuple[str, str]) -> OnLook | None:
        """The worker-side wait's metrics, the trigger's own
        (application/metrics/provider_metrics.py)."""
        if not self.metrics.enabled:
            return None
        tags = task_tags(app.namespace, *task)
        metrics = self.metrics

        def on_look(before: ApplicationState | None, step: Step) -> None:
            send(metrics, look_metrics(before, step, app.driver_container), tags)

        return on_look

    def finish(
        self,
        app: TrackedApplication,
        event: Mapping[str, Any],
        ref: TaskInstanceRef,
        *,
        driver_memory: Mapping[str, Any] | None,
        streamed: bool,
        retries_left: bool,
        publish: Callable[[dict[str, Any]], object],
    ) -> Ended:
        """Report the ended driver: `publish` gets the application's XCom (before its
        result is kept, as the record holds it); then the driver is kept or deleted."""
        if needs_driver_exception(event):
            exception = completion.driver_exception(self.pods, app, self.log)
            if exception:
                event = {**event, "driver_exception": exception}
        outcome = report(app, event, datetime.now(UTC))
        outcome.xcom["spark_version"] = app.spark_version
        outcome.xcom["driver_memory"] = dict(driver_memory) if driver_memory else None
        memory_raised = bool(driver_memory and "raised_from" in driver_memory)
        keep_for_memory = keep_for_retry(
            outcome.kind, memory_raised, self.memory_factor, retries_left
        )
        following = self.following
        if following.get_logs and not streamed and event.get("state") != "unknown":
            completion.log_driver_tail(self.pods, app, following.log_tail_lines, self.log)
        application_xcom = {**app.to_kwargs(), **outcome.xcom}
        publish(application_xcom)
        kept = (
            self.keep_results
            and outcome.succeeded
            and keep_result(  # until Airflow records it
                self.pods, ref, app.namespace, application_xcom, outcome.xcom, self.log
            )
        )
        if keep_for_memory:
            self.log.info(
                "Keeping driver pod %s: it ran out of memory, and the retry reads it",
                app.submission_id,
            )
        elif should_delete_driver(following.on_finish_action, event):
            self.log.info(
                "Deleting driver pod %s (%s)",
                app.submission_id,
                deletion_reason(following.on_finish_action, event),
            )
            self.delete(app)
        else:
            self.log.info(
                "Keeping driver pod %s (%s)", app.submission_id, following.on_finish_action
            )
        return Ended(outcome, memory_raised, kept)

    def delete(
        self,
        app: TrackedApplication,
        why: str = "",
        kill_of_try: int | Unguarded | None = UNGUARDED,
    ) -> None:
        """The driver pod and, unless keep_uploaded_files, what its submission uploaded; a
        kill (`kill_of_try`) spares a driver a newer try owns."""
        completion.delete_driver(
            self.pods,
            app,
            self.remove_uploads,
            self.uploads_conf,
            keep_uploads=self.uploads.keep_uploaded_files,
            log=self.log,
            why=why,
            kill_of_try=kill_of_try,
        )

    def _delete(self, namespace: str, name: str, why: str) -> None:
        delete_driver(
            self.pods,
            namespace,
            name,
            remove_uploads=self.remove_uploads,
            log=self.log,
            keep_uploads=self.uploads.keep_uploaded_files,
            why=why,
        )

    def fail_on_timeout(self, app: TrackedApplication, limit: str) -> tuple[str, dict[str, Any]]:
        """execution_timeout passed while deferred: the driver goes, with its uploads. The
        failure's message, and the application's XCom that says so."""
        message = (
            f"{limit} passed while deferred: Spark application {app.application_id} "
            f"(driver pod {app.submission_id}) ran for "
            f"{ran_for(app.submitted_at, datetime.now(UTC))} and was deleted"
        )
        self.delete(app, why="execution_timeout")
        xcom = {**app.to_kwargs(), "status": "failed", "reason": "ExecutionTimeout"}
        return message, {**xcom, "message": message}

    def resume(
        self, app: TrackedApplication | None, ref: TaskInstanceRef, namespace: Callable[[], str]
    ) -> Finished | Follow:
        """The driver of a resume without the trigger's final event: the application's pods
        when the task knows it, else the task instance's drivers in `namespace()`."""
        if app is not None:
            app_pods = self.pods.list_pods(app.namespace, application_selector(app.application_id))
            decision = decide_resume(app, app_pods, ())
        else:
            decision = decide_resume(None, (), self._drivers(ref, namespace()))
        if isinstance(decision, Missing):
            raise ApplicationFailed(f"Task {ref.task_id}: {decision.reason}")
        return decision

    def driver_of(
        self, ref: TaskInstanceRef, namespace: Callable[[], str]
    ) -> TrackedApplication | None:
        """The task instance's driver, found by its labels (a worker-free task records no
        XCom before it ends); None: it has none."""
        try:
            return self.resume(None, ref, namespace).app
        except ApplicationFailed:
            return None


def _listed_first(
    drivers: Sequence[Pod], relist: Callable[[], Sequence[Pod]]
) -> Callable[[], Sequence[Pod]]:
    """The drivers listed already (the memory retry read them), then fresh lists: the
    adoption's first decision costs no second request."""
    pending = [drivers]
    return lambda: pending.pop() if pending else relist()
