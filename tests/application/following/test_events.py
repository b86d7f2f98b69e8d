"""The final event's payload, built from the application's ids and its last state."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.following.events import final_event, is_complete_event
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState

IDS = ("spark-0123", "jobs", "pi-driver")


def test_a_succeeded_application_is_success_with_the_whole_state() -> None:
    state = ApplicationState(state="succeeded", driver_pod="pi-driver", exit_code=0)
    event = final_event(*IDS, state, queued_seconds=2.5)
    assert event == {
        "status": "success",
        "application_id": "spark-0123",
        "namespace": "jobs",
        **state.to_dict(),
        "queued_seconds": 2.5,
    }
    assert "cost" not in event


@pytest.mark.parametrize("reason", ["StartupTimeout", "RunTimeout", "QueueTimeout"])
def test_the_timeout_reasons_give_timeout(reason: str) -> None:
    event = final_event(*IDS, ApplicationState(state="failed", reason=reason))
    assert event["status"] == "timeout" and event["reason"] == reason


def test_any_other_end_is_failed() -> None:
    event = final_event(*IDS, ApplicationState(state="failed", reason="Error", exit_code=1))
    assert (event["status"], event["reason"], event["exit_code"]) == ("failed", "Error", 1)


def test_a_vanished_driver_is_driver_pod_not_found_naming_pod_application_and_namespace() -> None:
    event = final_event(*IDS, ApplicationState(state="unknown"))
    assert event["status"] == "failed" and event["state"] == "failed"
    assert event["reason"] == "DriverPodNotFound"
    assert event["driver_pod"] == "pi-driver"
    assert event["message"] == (
        "driver pod pi-driver of application spark-0123 in namespace jobs no longer exists "
        "(deleted before it finished)"
    )


def test_the_cost_is_copied_in_when_known() -> None:
    cost = {"core_seconds": 4.0}
    event = final_event(*IDS, ApplicationState(state="succeeded"), cost=cost)
    assert event["cost"] == cost and event["cost"] is not cost


def test_a_complete_event_has_a_final_status_and_a_state() -> None:
    assert is_complete_event(final_event(*IDS, ApplicationState(state="succeeded")))
    assert not is_complete_event(None)
    assert not is_complete_event({"status": "running", "state": "running"})
    assert not is_complete_event({"status": "success"})
    assert not is_complete_event(["success"])
