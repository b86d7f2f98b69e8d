"""How a worker-free task ends, for the operator's and the sensor's triggers alike: the
event that ends it in the triggerer, and, the one case a worker still runs for it, its end
in a worker.

Airflow 3.3 retries a `TaskFailedEvent` whenever the task has tries left, whatever the
failure; so a failure that must not retry (an application error in a task with retries,
a sensor's timeout: `application/task/task_end.py`) comes back as a plain event, and
`end_in_worker` fails the task without a retry, after pushing the XComs the trigger
gathered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, NoReturn

from airflow_provider_sparkk8s.application.task.task_end import (
    INVALID_INPUT,
    SENSOR_TIMEOUT,
    WORKER_END_METHOD,
    TaskEnd,
    failure_of,
    is_worker_end,
)
from airflow_provider_sparkk8s.version_compat import (
    AirflowFailException,
    AirflowSensorTimeout,
    StartTriggerArgs,
    TaskFailedEvent,
    TaskSkippedEvent,
    TaskSuccessEvent,
    TriggerEvent,
    not_retried,
)

# (task instance, key, value): how a trigger stores one XCom of its task.
PushXcom = Callable[[Any, str, Any], None]


def start_args(
    trigger_cls: str, kwargs: dict[str, Any], timeout: timedelta | None
) -> StartTriggerArgs:
    """What Airflow starts a worker-free task with: its trigger, the task's parameters as
    the trigger's kwargs, and the end in a worker a handed-over event resumes."""
    return StartTriggerArgs(
        trigger_cls=trigger_cls,
        trigger_kwargs=kwargs,
        next_method=WORKER_END_METHOD,
        next_kwargs={},
        timeout=timeout,
    )


async def end_event(end: TaskEnd, ti: Any, log: Any, push: PushXcom) -> TriggerEvent:
    """The event that ends the task: a success, skip or failure in the triggerer, after
    its XComs are pushed; or the plain event a worker fails the task from."""
    if end.in_worker and not end.succeeded:
        log.error("%s", end.failure.get("message"))
        log.info("Not retried: a worker fails the task (Airflow would retry it)")
        return TriggerEvent(end.worker_payload())
    xcoms = await _push(end.xcoms, ti, push)
    if end.succeeded:
        return TaskSuccessEvent(xcoms=xcoms)
    if end.skipped:
        log.info("%s; skipped (soft_fail)", end.failure.get("message"))
        return TaskSkippedEvent(xcoms=xcoms)
    log.error("%s", end.failure.get("message"))
    return TaskFailedEvent(xcoms=xcoms)


async def _push(xcoms: Mapping[str, Any], ti: Any, push: PushXcom) -> dict[str, Any] | None:
    """Push the XComs as a worker does, through the triggerer's task instance; what is
    left for the event (none, unless this task instance cannot push). Airflow 3.3.2
    stores an end event's XComs JSON-encoded twice (seen on the real triggerer: a
    downstream task would pull a string), so they do not travel in the event."""
    if ti is None or not xcoms:  # not run by a triggerer
        return dict(xcoms) or None
    for key, value in xcoms.items():
        await asyncio.to_thread(push, ti, key, value)
    return None


def end_in_worker(event: Any, xcom_push: Callable[..., Any]) -> NoReturn:
    """Push the event's XComs, then raise its failure as one Airflow does not retry."""
    if not is_worker_end(event):
        raise AirflowFailException(f"A worker-free task resumed without its end: {event!r}")
    for key, value in (event.get("xcoms") or {}).items():
        xcom_push(key=key, value=value)
    failure = event.get("failure") or {}
    if failure.get("kind") == INVALID_INPUT:
        raise AirflowFailException(f"{failure.get('message')} (invalid input: not retried)")
    if failure.get("kind") == SENSOR_TIMEOUT:
        raise AirflowSensorTimeout(str(failure.get("message")))  # Airflow never retries it
    error = failure_of(failure)
    raise not_retried(error, error.kind.replace("_", " "))
