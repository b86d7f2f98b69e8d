"""Reading the run summary from a History Server (services/ui/history_server.py), on a fake
REST API: the wait for the application to complete, the paths asked, the errors."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.services.task.task_run import recorded
from airflow_provider_sparkk8s.services.ui import history_server
from airflow_provider_sparkk8s.services.ui.history_server import (
    HistoryUnavailable,
    read_run_summary,
    read_spark_version,
    read_summary,
    wait_for_application,
)

STAGE = {
    "stageId": 3,
    "attemptId": 0,
    "status": "COMPLETE",
    "name": "collect",
    "firstTaskLaunchedTime": "2026-12-02T05:00:00.000GMT",
    "completionTime": "2026-12-02T05:00:02.000GMT",
    "numCompleteTasks": 4,
}


class FakeApi:
    """Answers from a dict of path -> value; 404s (OSError) until `listed_after` looks."""

    def __init__(self, answers: dict[str, Any], listed_after: int = 0):
        self.answers, self.listed_after = answers, listed_after
        self.asked: list[str] = []

    def __call__(self, path: str) -> Any:
        self.asked.append(path)
        if path.count("/") == 1 and len(self.asked) <= self.listed_after:
            raise OSError("HTTP Error 404: Not Found")
        return self.answers[path]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def answers(app: dict[str, Any], base: str = "applications/spark-1") -> dict[str, Any]:
    return {
        "applications/spark-1": app,
        f"{base}/jobs": [{"status": "SUCCEEDED"}],
        f"{base}/stages": [STAGE],
        f"{base}/allexecutors": [{"id": "driver"}, {"id": "1"}],
        f"{base}/stages/3/0/taskSummary?quantiles=0.5,1.0": {"duration": [100.0, 400.0]},
    }


def test_it_waits_until_the_server_lists_the_application_completed_then_reads_it():
    app = {"id": "spark-1", "attempts": [{"duration": 9000, "completed": True}]}
    api, clock = FakeApi(answers(app), listed_after=3), Clock()
    summary = read_run_summary(api, "spark-1", 60, clock, clock.sleep)
    assert (summary.jobs, summary.tasks, summary.executors, summary.duration_ms) == (1, 4, 1, 9000)
    assert summary.slowest_stage is not None and summary.slowest_stage["skew"] == 4.0
    assert api.asked[:4] == ["applications/spark-1"] * 4
    assert 0 < clock.now < 60


def test_an_attempt_id_goes_into_the_paths():
    app = {"id": "spark-1", "attempts": [{"attemptId": "2", "completed": True}]}
    api, clock = FakeApi(answers(app, "applications/spark-1/2")), Clock()
    assert read_run_summary(api, "spark-1", 5, clock, clock.sleep).jobs == 1


def test_an_application_still_in_progress_at_the_deadline_is_summarized_as_it_is():
    app = {"id": "spark-1", "attempts": [{"duration": 5, "completed": False}]}
    api, clock = FakeApi(answers(app)), Clock()
    assert wait_for_application(api, "spark-1", 10, clock, clock.sleep) == app
    assert clock.now >= 10


def test_a_server_that_never_lists_it_is_unavailable_with_why():
    api, clock = FakeApi({}, listed_after=10**6), Clock()
    with pytest.raises(HistoryUnavailable, match=r"spark-1 after 30 s .*404"):
        read_run_summary(api, "spark-1", 30, clock, clock.sleep)


def test_the_spark_version_is_read_from_the_version_endpoint():
    api = FakeApi({"version": {"spark": "3.5.6"}})
    assert read_spark_version(api) == "3.5.6" and api.asked == ["version"]


@pytest.mark.parametrize("answer", [{}, {"spark": ""}, {"spark": 3}, ["3.5.6"], None])
def test_an_odd_version_answer_is_no_version(answer):
    assert read_spark_version(FakeApi({"version": answer})) is None


def test_an_unreachable_server_is_no_version():
    def refused(path: str) -> Any:
        raise ConnectionRefusedError(111, "Connection refused")

    def not_json(path: str) -> Any:
        raise ValueError("Expecting value")

    assert read_spark_version(refused) is None and read_spark_version(not_json) is None


APP = TrackedApplication(
    "spark-abc", "team-a", "pi-1-driver", "spark-kubernetes-driver", "2026-11-29T18:00:00Z"
)
LOGGER = "sparkk8s.test.run_summary"
LOG_OF_RUN = logging.getLogger(LOGGER)


def test_the_run_summary_is_read_only_with_an_event_log_and_a_server(monkeypatch, caplog):
    caplog.set_level(logging.INFO, LOGGER)
    ended = {"status": "success", "state": "succeeded", "exit_code": 0}
    assert read_summary("http://history:18080", APP, ended, LOG_OF_RUN, conn_id="c") is None
    logged = recorded(APP, "3.5.1", {"spark.eventLog.enabled": "true"})
    assert read_summary(None, logged, ended, LOG_OF_RUN, conn_id="spark_a") is None
    assert "history_server_url on connection 'spark_a'" in caplog.text

    def unavailable(fetch: Any, app_id: str) -> Any:
        raise OSError("connection refused")

    monkeypatch.setattr(history_server, "read_run_summary", unavailable)
    assert read_summary("http://history:18080", logged, ended, LOG_OF_RUN, conn_id="c") is None
    assert "No run summary of spark-abc: connection refused" in caplog.text
