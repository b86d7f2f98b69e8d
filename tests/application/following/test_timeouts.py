"""The startup and run timeouts, as pure functions of the last state and the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_sparkk8s.application.following.timeouts import (
    deferral_timeout,
    limit_text,
    ran_for,
    seconds_to_next_deadline,
    shadowed_timeouts,
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


# ------------------------------------------------------------------ execution_timeout

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_the_deferral_gets_what_is_left_of_execution_timeout():
    hour = timedelta(hours=1)
    assert deferral_timeout(None, T0, T0 + timedelta(minutes=5)) is None
    assert deferral_timeout(hour, T0, T0 + timedelta(minutes=5)) == timedelta(minutes=55)
    # Already past: zero or less, the operator fails the try at once.
    assert deferral_timeout(hour, T0, T0 + timedelta(hours=2)) == -hour
    # No start known (a clock behind the server's counts as nothing spent).
    assert deferral_timeout(hour, None, T0) == hour
    assert deferral_timeout(hour, T0, T0 - timedelta(seconds=3)) == hour


def test_timeouts_at_or_above_execution_timeout_are_shadowed():
    assert shadowed_timeouts(600, None, None) == []
    assert shadowed_timeouts(600, 3600, timedelta(minutes=10)) == [
        "startup_timeout",
        "run_timeout",
    ]
    assert shadowed_timeouts(60, 3600, timedelta(minutes=30)) == ["run_timeout"]
    assert shadowed_timeouts(60, None, timedelta(minutes=30)) == []


def test_ran_for_names_whole_seconds_or_says_it_is_unknown():
    assert ran_for("2026-12-01T12:00:00+00:00", T0 + timedelta(seconds=75.4)) == "75s"
    assert ran_for("2026-12-01T12:00:00", T0 + timedelta(seconds=3)) == "3s"
    assert ran_for(None, T0) == "an unknown time"
    assert ran_for("yesterday", T0) == "an unknown time"


def test_limit_text():
    assert limit_text(timedelta(minutes=1, seconds=40)) == "100s"
    assert limit_text(timedelta(seconds=1.5)) == "1.5s"
    assert limit_text(None) == "None"


QUEUED = ApplicationState(
    state="pending", reason="QueuedByKueue", message="queued in ClusterQueue cq: full"
)


def test_time_queued_in_kueue_counts_against_the_queue_timeout_not_the_startup_timeout():
    assert timed_out(QUEUED, 200.0, 100.0, 10.0, None) is None  # startup 10 s: not while queued
    assert timed_out(QUEUED, 149.0, 100.0, 10.0, None, queue_timeout=50.0) is None
    failure = timed_out(QUEUED, 150.0, 100.0, 10.0, None, queue_timeout=50.0)
    assert failure is not None and (failure.state, failure.reason) == ("failed", "QueueTimeout")
    assert failure.message == (
        "the application stayed queued in Kueue for more than 50s (queued in ClusterQueue cq: full)"
    )
    # the run timeout still counts from the submission, queued or not
    assert timed_out(QUEUED, 150.0, 100.0, None, 40.0, queue_timeout=500.0).reason == "RunTimeout"


def test_once_admitted_the_startup_timeout_counts_from_the_admission():
    pending = ApplicationState(state="pending", reason="Unschedulable")
    assert timed_out(pending, 205.0, 100.0, 10.0, None, startup_from=200.0) is None
    assert timed_out(pending, 210.0, 100.0, 10.0, None, startup_from=200.0).reason == (
        "StartupTimeout"
    )
    assert seconds_to_next_deadline(pending, 205.0, 100.0, 10.0, None, startup_from=200.0) == (
        pytest.approx(5.01)
    )
    # queued: only the queue's deadline (and the run's)
    assert seconds_to_next_deadline(QUEUED, 110.0, 100.0, 10.0, None) is None
    assert seconds_to_next_deadline(QUEUED, 110.0, 100.0, 10.0, None, queue_timeout=30.0) == (
        pytest.approx(20.01)
    )
