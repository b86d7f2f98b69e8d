"""A succeeded application's result is kept until Airflow records it (issue 43): the next
try of the same clear delivers it instead of running the application again; a clear runs it
anew; the success callback drops the record only when Airflow holds the task as success."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.delivery import RESULT_KEY, record_name
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from testenv.fakes import FakeCluster, FakeTaskInstance, driver_status
from tests.operators.test_operator_flow import make_operator, posts, progress

REF = TaskInstanceRef("etl", "spark_pi", "manual__1")
RECORD_PATH = f"/api/v1/namespaces/team-a/configmaps/{record_name(REF)}"


class AnsweringTaskInstance(FakeTaskInstance):
    """A task instance whose `get_task_states` answers what Airflow holds."""

    def __init__(self, state: str | None = "success", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state = state

    def get_task_states(self, dag_id, task_ids, run_ids, map_index=None):  # type: ignore[no-untyped-def]
        return {run_ids[0]: {task_ids[0]: self.state}}


def context(ti: FakeTaskInstance, clear_number: int | None = 0) -> dict[str, Any]:
    return {"ti": ti, "dag_run": SimpleNamespace(clear_number=clear_number)}


def records(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [a for a in cluster.applied if a["path"] == RECORD_PATH]


def run_to_success(cluster: FakeCluster, ti: FakeTaskInstance, clear_number: int | None = 0):  # type: ignore[no-untyped-def]
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    operator = make_operator(on_finish_action="delete_pod")
    return operator, operator.execute(context(ti, clear_number))


def test_a_succeeded_application_keeps_its_result_until_airflow_records_it(cluster):
    ti = AnsweringTaskInstance("success")
    operator, returned = run_to_success(cluster, ti)
    (kept,) = records(cluster)
    assert kept["method"] == "PATCH"
    record = json.loads(kept["content"])
    assert record["metadata"]["labels"]["sparkk8s.io/clear-number"] == "0"
    stored = json.loads(record["data"][RESULT_KEY])
    assert stored["returned"] == returned
    assert stored["application"]["application_id"] == returned["application_id"]
    assert not cluster.pods  # the driver went as on_finish_action says: the record stays
    operator.result_delivered(context(ti))
    assert [a["method"] for a in records(cluster)] == ["PATCH", "DELETE"]


@pytest.mark.parametrize("state", ["running", "up_for_retry", "failed"])
def test_the_record_stays_while_airflow_does_not_hold_the_success(cluster, state):
    """Airflow runs success callbacks also when it could not record the success (a 409
    from its API after the scheduler failed the try): the record must survive that."""
    ti = AnsweringTaskInstance(state)
    operator, _ = run_to_success(cluster, ti)
    operator.result_delivered(context(ti))
    assert [a["method"] for a in records(cluster)] == ["PATCH"]


def test_the_next_try_delivers_the_kept_result_and_runs_nothing(cluster):
    _, first = run_to_success(cluster, AnsweringTaskInstance("up_for_retry"))
    submitted = len(posts(cluster))
    ti = AnsweringTaskInstance("success", try_number=2)
    operator = make_operator(on_finish_action="delete_pod")
    returned = operator.execute(context(ti))
    assert returned == first
    assert len(posts(cluster)) == submitted  # no new driver
    assert ti.xcom["spark_application"]["application_id"] == first["application_id"]
    operator.result_delivered(context(ti))
    assert [a["method"] for a in records(cluster)] == ["PATCH", "DELETE"]


def test_a_clear_drops_the_kept_result_and_runs_the_application_again(cluster):
    _, first = run_to_success(cluster, AnsweringTaskInstance("up_for_retry"))
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    ti = AnsweringTaskInstance("success", try_number=2)
    second = make_operator(on_finish_action="delete_pod").execute(context(ti, clear_number=1))
    assert second["application_id"] != first["application_id"]
    assert len(posts(cluster)) == 2
    methods = [a["method"] for a in records(cluster)]
    assert methods == ["PATCH", "DELETE", "PATCH"]  # kept, dropped by the clear, kept anew


def test_without_a_clear_count_nothing_is_kept(cluster):
    """Airflow 3.0 gives no clear count: a clear could not be told from a retry."""
    run_to_success(cluster, AnsweringTaskInstance("success"), clear_number=None)
    assert records(cluster) == []
