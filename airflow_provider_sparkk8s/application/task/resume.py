"""Resuming a deferred task without the trigger's event: a pure decision.

Airflow resumes a deferred task instance with `execute_complete(**next_kwargs)`; the event
is added to those kwargs only when the trigger fires. When the process that ran the trigger
is killed and the same task instance runs again (`airflow tasks test` on it, for one), the
event is missing. The driver is then looked up: by the application the task followed (its
pods, executors included), else by the task instance's identity labels. The rules:
- a finished driver gives the final event the trigger would have sent;
- a live driver is followed again (adopted, never submitted twice);
- no driver at all fails the task, saying why (nothing to adopt, nothing to report).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_sparkk8s.application.following.events import final_event
from airflow_provider_sparkk8s.application.following.tracked import (
    TrackedApplication,
    tracked_from_pod,
)
from airflow_provider_sparkk8s.application.task.reattach import Adopt, by_submission, decide
from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
from airflow_provider_sparkk8s.records import record

Pod = Mapping[str, Any]

NO_DRIVER = (
    "resumed without the trigger's event, and this task instance has no driver pod to adopt "
    "or report on (it was deleted, or never created); clear the task to submit again"
)


@record
class Finished:
    """The driver has ended: report it with the event the trigger would have sent."""

    app: TrackedApplication
    event: dict[str, Any]


@record
class Follow:
    """The driver still runs: follow it again."""

    app: TrackedApplication


@record
class Missing:
    """Nothing to follow or report: fail, saying why."""

    reason: str


def decide_resume(
    app: TrackedApplication | None, app_pods: Sequence[Pod], identity_drivers: Sequence[Pod]
) -> Finished | Follow | Missing:
    """`app`: the application the deferral's kwargs (or the XCom) name, if any; `app_pods`:
    its pods (empty when `app` is None); `identity_drivers`: the driver pods labelled with
    this task instance (read only when `app` is None)."""
    if app is not None:
        state = reduce_application(
            app_pods, driver_pod_name=app.driver_pod, driver_container=app.driver_container
        )
        if not state.terminal and state.state != "unknown":
            return Follow(app)
        # `unknown`: the driver is gone; final_event says so (DriverPodNotFound). No cost:
        # the executors that left before this look are not known, so a total would be wrong.
        event = final_event(app.application_id, app.namespace, app.driver_pod, state)
        return Finished(app, event)
    decision = decide(identity_drivers)
    if isinstance(decision, Adopt):
        return Follow(tracked_from_pod(decision.pod, adopted=True))
    if not identity_drivers:
        return Missing(NO_DRIVER)
    newest = max(identity_drivers, key=by_submission)
    adopted = tracked_from_pod(newest, adopted=True)
    state = reduce_application(
        [newest], driver_pod_name=adopted.driver_pod, driver_container=adopted.driver_container
    )
    event = final_event(adopted.application_id, adopted.namespace, adopted.driver_pod, state)
    return Finished(adopted, event)


def of_another_application(event: Mapping[str, Any], app: TrackedApplication) -> bool:
    """An event that names another application: a cleared try's old trigger can fire (its
    driver deleted by this try) and resume this try; it is not this application's end."""
    other = event.get("application_id")
    return bool(other) and other != app.application_id
