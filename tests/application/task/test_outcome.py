"""The final event, and the XCom values, failure messages and cleanup decisions made from it
(plain data)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following import events
from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.outcome import (
    deletion_reason,
    duration_seconds,
    needs_driver_exception,
    report,
    should_delete_driver,
)
from airflow_provider_sparkk8s.errors import (
    ApplicationError,
    ApplicationFailed,
    ConfigurationError,
    DriverOutOfMemory,
    InfrastructureFailure,
)
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, reduce_application
from testenv.harness.pod_builders import pod, terminated

APP = TrackedApplication(
    "spark-abc", "team-a", "pi-1-driver", "spark-kubernetes-driver", "2026-11-29T18:00:00Z"
)
NOW = datetime(2026, 11, 29, 18, 5, tzinfo=UTC)


def final_event(app: TrackedApplication, state: ApplicationState) -> dict[str, Any]:
    return events.final_event(app.application_id, app.namespace, app.driver_pod, state)


def test_success_reports_every_xcom_field():
    event = final_event(APP, ApplicationState(state="succeeded", reason="Completed", exit_code=0,
                                              finished_at="2026-11-29T18:00:42Z"))  # fmt: skip
    outcome = report(APP, event, NOW)
    assert outcome.succeeded and outcome.failure is None
    assert outcome.xcom == {
        "application_id": "spark-abc", "namespace": "team-a", "driver_pod": "pi-1-driver",
        "submission_id": "team-a:pi-1-driver", "state": "succeeded", "status": "success",
        "reason": "succeeded", "cause": "Completed", "exit_code": 0, "exception": None,
        "exit_exception": None,
        "duration_seconds": 42.0,
        "executors": {"counts": {}, "failures": []}, "cost": None, "adopted": False,
        "queued_seconds": None,
    }  # fmt: skip


def test_a_failure_names_reason_exit_code_message_and_the_first_failed_executor():
    state = ApplicationState(
        state="failed", reason="Error", exit_code=1, termination_message="Job aborted"
    )
    event = final_event(APP, state)
    event["executors"]["failures"] = [
        {"pod_name": "pi-exec-2", "reason": "OOMKilled", "exit_code": 137}
    ]
    outcome = report(APP, event, NOW)
    assert not outcome.succeeded
    assert outcome.failure == (
        "Spark application spark-abc (driver pod team-a:pi-1-driver) failed: Error, exit code 1: "
        "Job aborted; 1 executor(s) failed, first pi-exec-2: OOMKilled (exit code 137)"
    )


def test_a_vanished_driver_is_a_failure_that_says_so():
    event = final_event(APP, ApplicationState(state="unknown", reason="DriverPodNotFound"))
    assert (event["status"], event["state"], event["reason"]) == (
        "failed",
        "failed",
        "DriverPodNotFound",
    )
    assert "no longer exists" in report(APP, event, NOW).failure


def test_timeouts_have_their_own_status():
    event = final_event(
        APP, ApplicationState(state="failed", reason="StartupTimeout", message="never started")
    )
    assert event["status"] == "timeout"
    assert "StartupTimeout: never started" in report(APP, event, NOW).failure


def test_duration_runs_from_creation_to_the_end_or_now():
    assert duration_seconds("2026-11-29T18:00:00Z", "2026-11-29T18:01:30Z", NOW) == 90.0
    assert duration_seconds("2026-11-29T18:00:00Z", None, NOW) == 300.0
    assert duration_seconds("", None, NOW) is None


@pytest.mark.parametrize(
    ("action", "status", "delete"),
    [
        ("delete_pod", "success", True), ("delete_pod", "failed", True),
        ("delete_succeeded_pod", "success", True), ("delete_succeeded_pod", "failed", False),
        ("keep_pod", "success", False), ("keep_pod", "failed", False),
        ("keep_pod", "timeout", True), ("delete_succeeded_pod", "timeout", True),
    ],
)  # fmt: skip
def test_cleanup_decision(action, status, delete):
    assert should_delete_driver(action, {"status": status}) is delete


def test_only_a_failed_driver_without_a_message_needs_its_logs_exception() -> None:
    failed = {"status": "failed", "exit_code": 1, "termination_message": None, "message": None}
    assert needs_driver_exception(failed)
    assert not needs_driver_exception({**failed, "termination_message": "from the pod"})
    assert not needs_driver_exception({**failed, "message": "from the reducer"})
    assert not needs_driver_exception({**failed, "exit_code": None})  # never ran: no log
    assert not needs_driver_exception({**failed, "status": "timeout"})
    assert not needs_driver_exception({**failed, "status": "success", "exit_code": 0})


def test_the_log_says_a_timed_out_driver_is_deleted_because_it_timed_out():
    timeout, failed = {"status": "timeout"}, {"status": "failed"}
    assert deletion_reason("delete_succeeded_pod", timeout) == "timed out"
    assert deletion_reason("keep_pod", timeout) == "timed out"
    assert deletion_reason("delete_pod", failed) == "delete_pod"


def test_a_driver_whose_image_does_not_exist_is_deleted_whatever_the_action_and_says_why():
    missing = {"status": "failed", "reason": "ImageNotFound"}
    for action in ("keep_pod", "delete_succeeded_pod", "delete_pod"):
        assert should_delete_driver(action, missing)
        assert deletion_reason(action, missing) == "its image does not exist"


def test_a_missing_image_is_a_configuration_error_naming_the_image_and_the_answer():
    state = ApplicationState(
        state="failed",
        reason="ImageNotFound",
        message='image "apache/spark:3.5.99" of container spark-kubernetes-driver does not '
        "exist in its registry (...): docker.io/apache/spark:3.5.99: not found",
        driver_pod="pi-1-driver",
    )
    outcome = report(APP, final_event(APP, state), NOW)
    assert (outcome.kind, outcome.xcom["reason"], outcome.xcom["cause"]) == (
        "configuration_error",
        "configuration_error",
        "ImageNotFound",
    )
    error = outcome.exception()
    assert isinstance(error, ConfigurationError) and error.reason == "ImageNotFound"
    assert str(error).startswith(
        "[configuration_error] Spark application spark-abc (driver pod team-a:pi-1-driver) "
        'failed: ImageNotFound: image "apache/spark:3.5.99" of container'
    )
    assert str(error).endswith("docker.io/apache/spark:3.5.99: not found")


def test_a_failure_reports_its_kind_as_the_xcom_reason_and_raises_its_class():
    state = ApplicationState(state="failed", reason="OOMKilled", exit_code=137)
    outcome = report(APP, final_event(APP, state), NOW)
    assert (outcome.kind, outcome.xcom["reason"], outcome.xcom["cause"]) == (
        "out_of_memory",
        "out_of_memory",
        "OOMKilled",
    )
    error = outcome.exception(memory_raised=True)
    assert isinstance(error, DriverOutOfMemory) and isinstance(error, ApplicationFailed)
    assert (error.pod, error.reason, error.exit_code, error.memory_raised) == (
        "team-a:pi-1-driver",
        "OOMKilled",
        137,
        True,
    )
    assert str(error).startswith("[out_of_memory] Spark application spark-abc")


def test_the_driver_logs_exception_line_wins_over_sparks_exit_exception():
    state = ApplicationState(
        state="failed",
        reason="Error",
        exit_code=1,
        exit_exception="org.apache.spark.SparkUserAppException: User application exited with 1",
    )
    event = {**final_event(APP, state), "driver_exception": "RuntimeError: boom"}
    outcome = report(APP, event, NOW)
    assert outcome.xcom["exception"] == "RuntimeError: boom"
    error = outcome.exception()
    assert isinstance(error, ApplicationError) and error.exception_line == "RuntimeError: boom"
    assert outcome.failure is not None and outcome.failure.endswith(
        "exit code 1: RuntimeError: boom"
    )
    # Without the log's line, Spark's own annotation names the failure.
    alone = report(APP, final_event(APP, state), NOW)
    assert alone.xcom["exception"] == state.exit_exception
    assert alone.failure is not None and "SparkUserAppException" in alone.failure


def test_an_evicted_driver_is_infrastructure_and_its_cause_says_eviction():
    evicting = {"type": "DisruptionTarget", "status": "True",
                "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}  # fmt: skip
    evicted = pod("pi-1-driver", phase="Failed", containers=[terminated(143, "Error")],
                  conditions=[evicting])  # fmt: skip
    state = reduce_application([evicted], driver_pod_name="pi-1-driver")
    outcome = report(APP, final_event(APP, state), NOW)
    assert (outcome.xcom["reason"], outcome.xcom["cause"]) == (
        "infrastructure",
        "EvictionByEvictionAPI",
    )
    assert outcome.failure is not None
    assert "failed: EvictionByEvictionAPI, exit code 143: driver pod pi-1-driver was evicted" in (
        outcome.failure
    )
    error = outcome.exception()
    assert isinstance(error, InfrastructureFailure)
    assert str(error).startswith("[infrastructure] Spark application spark-abc")
