"""A worker-free task's end in a worker: the one case a worker still runs for it.

Airflow 3.3 retries a `TaskFailedEvent` whenever the task has tries left, whatever the
failure; so a failure that must not retry (an application error in a task with retries,
`application/task/task_end.py`) comes back as a plain event, and this fails the task
without a retry, after pushing the XComs the trigger gathered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from airflow_provider_sparkk8s.application.task.task_end import (
    INVALID_INPUT,
    failure_of,
    is_worker_end,
)
from airflow_provider_sparkk8s.version_compat import AirflowFailException, not_retried


def end_in_worker(event: Any, xcom_push: Callable[..., Any]) -> NoReturn:
    """Push the event's XComs, then raise its failure as one Airflow does not retry."""
    if not is_worker_end(event):
        raise AirflowFailException(f"A worker-free task resumed without its end: {event!r}")
    for key, value in (event.get("xcoms") or {}).items():
        xcom_push(key=key, value=value)
    failure = event.get("failure") or {}
    if failure.get("kind") == INVALID_INPUT:
        raise AirflowFailException(f"{failure.get('message')} (invalid input: not retried)")
    error = failure_of(failure)
    raise not_retried(error, error.kind.replace("_", " "))
