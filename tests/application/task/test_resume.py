"""Resuming a deferred task without the trigger's event: the pure decision (plain pods)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.following.events import is_complete_event
from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.resume import (
    Finished,
    Follow,
    Missing,
    decide_resume,
)
from tests.application.task.test_reattach import FAILED, RUNNING, SUCCEEDED, driver

APP = TrackedApplication("spark-abc", "team", "job-1-driver", "spark-kubernetes-driver", "t0")


def labelled(pod: dict) -> dict:
    pod["metadata"]["labels"]["spark-app-selector"] = "spark-abc"
    pod["metadata"]["namespace"] = "team"
    return pod


@pytest.mark.parametrize(
    ("event", "complete"),
    [
        (None, False),
        ({}, False),
        ({"status": "success"}, False),  # partial: no state
        ({"status": "maybe", "state": "succeeded"}, False),
        ({"status": "success", "state": "succeeded"}, True),
        ({"status": "timeout", "state": "pending", "reason": "StartupTimeout"}, True),
    ],
)
def test_what_counts_as_a_whole_event(event, complete):
    assert is_complete_event(event) is complete


def test_a_followed_driver_still_running_is_followed_again():
    pods = [labelled(driver("job-1-driver", 1, RUNNING))]
    assert decide_resume(APP, pods, []) == Follow(APP)


def test_a_followed_driver_that_finished_gives_the_final_event():
    decision = decide_resume(APP, [labelled(driver("job-1-driver", 1, FAILED))], [])
    assert isinstance(decision, Finished)
    assert decision.app == APP
    assert (decision.event["status"], decision.event["exit_code"]) == ("failed", 1)
    assert decision.event["application_id"] == "spark-abc"


def test_a_followed_driver_that_is_gone_fails_saying_so():
    decision = decide_resume(APP, [], [])
    assert isinstance(decision, Finished)
    assert (decision.event["status"], decision.event["reason"]) == ("failed", "DriverPodNotFound")
    assert "job-1-driver" in decision.event["message"]


def test_without_the_application_the_task_identity_finds_the_live_driver():
    live = labelled(driver("job-2-driver", 2, RUNNING))
    old = labelled(driver("job-1-driver", 1, FAILED))
    decision = decide_resume(None, [], [old, live])
    assert isinstance(decision, Follow)
    assert (decision.app.driver_pod, decision.app.adopted) == ("job-2-driver", True)
    assert decision.app.application_id == "spark-abc"


def test_without_the_application_the_newest_finished_driver_is_reported():
    old = labelled(driver("job-1-driver", 1, FAILED))
    done = decide_resume(None, [], [old, labelled(driver("job-2-driver", 2, SUCCEEDED))])
    assert isinstance(done, Finished)
    assert (done.app.driver_pod, done.event["status"]) == ("job-2-driver", "success")


def test_no_driver_at_all_is_a_clear_failure():
    decision = decide_resume(None, [], [])
    assert isinstance(decision, Missing)
    assert "no driver pod to adopt or report on" in decision.reason


def test_an_event_naming_another_application_is_not_this_ones_end():
    from airflow_provider_sparkk8s.application.task.resume import of_another_application

    assert of_another_application({"application_id": "spark-old"}, APP)
    assert not of_another_application({"application_id": APP.application_id}, APP)
    assert not of_another_application({}, APP)  # an event that names none is taken as this one's
