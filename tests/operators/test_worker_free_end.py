"""A worker-free task's end in a worker (operators/worker_free_end.py): the trigger's XComs
are pushed, then the failure is raised as one Airflow never retries."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.operators.worker_free_end import end_in_worker
from airflow_provider_sparkk8s.version_compat import AirflowFailException


def test_an_event_that_is_not_a_worker_end_fails_naming_it() -> None:
    with pytest.raises(AirflowFailException, match="without its end"):
        end_in_worker({"status": "success"}, lambda **_: None)


def test_the_xcoms_are_pushed_before_an_invalid_input_fails_without_retry() -> None:
    from airflow_provider_sparkk8s.application.task.task_end import refused

    pushed: dict[str, Any] = {}

    def push(*, key: str, value: Any) -> None:
        pushed[key] = value

    end = refused("conf: 'spark.x' must be a string", may_retry=True)
    payload = {**end.worker_payload(), "xcoms": {"spark_application": {"k": "v"}}}
    with pytest.raises(AirflowFailException, match="invalid input: not retried"):
        end_in_worker(payload, push)
    assert pushed == {"spark_application": {"k": "v"}}
