"""The startup and run timeouts, as pure functions of the last state and the clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_sparkk8s.application.timeouts import (
    seconds_to_next_deadline,
    timed_out,
    timeout_seconds,
)
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState


def test_timed_out_is_pure_and_measures_from_start_time():
    pending = ApplicationState(
        state="pending", reason="Unschedulable", message="0/3 nodes", problem=True
    )
    assert timed_out(pending, 109.0, 100.0, 10.0, 100.0) is None
    failure = timed_out(pending, 110.0, 100.0, 10.0, 100.0)
    assert failure.reason == "StartupTimeout" and "Unschedulable" in failure.message
    assert timed_out(None, 110.0, 100.0, 10.0, None).message.endswith("never scheduled or started)")
    running_state = ApplicationState(state="running")
    assert timed_out(running_state, 150.0, 100.0, 10.0, None) is None
    assert timed_out(running_state, 200.0, 100.0, 10.0, 100.0).reason == "RunTimeout"


def test_the_next_deadline_is_the_nearest_one_that_still_applies():
    pending, running = ApplicationState(state="pending"), ApplicationState(state="running")
    assert seconds_to_next_deadline(pending, 100.0, 100.0, 10.0, 60.0) == pytest.approx(10.01)
    assert seconds_to_next_deadline(running, 100.0, 100.0, 10.0, 60.0) == pytest.approx(60.01)
    assert seconds_to_next_deadline(running, 100.0, 100.0, 10.0, None) is None
    assert seconds_to_next_deadline(None, 200.0, 100.0, 10.0, None) == pytest.approx(0.01)


def test_timeout_parameters_are_positive_seconds_or_none():
    assert timeout_seconds("run_timeout", None) is None
    assert timeout_seconds("run_timeout", timedelta(minutes=2)) == 120.0
    assert timeout_seconds("startup_timeout", 5) == 5.0
    with pytest.raises(SparkConfError, match="startup_timeout=0 is invalid"):
        timeout_seconds("startup_timeout", 0)
