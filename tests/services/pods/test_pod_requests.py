"""Pod operations as requests (`pod_requests`): the calls each yields, and what each answer
means, driven by hand through an `Exchange` as either sender drives it."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.ownership import Spare
from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.services.pods import pod_requests as requests
from airflow_provider_sparkk8s.services.pods.pod_requests import (
    ABSENT,
    Exchange,
    Operation,
    PodCall,
)
from airflow_provider_sparkk8s.submission import kueue

POD_PATH = "/api/v1/namespaces/ns/pods/d"
WORKLOAD_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/spark-1"


def status(code: int, path: str = POD_PATH) -> KubeApiError:
    return KubeApiError(code, "Status", f"status {code}", method="GET", path=path)


def drive(operation: Operation[Any], *answers: Any) -> tuple[Any, list[PodCall]]:
    """The operation's result and its calls, each answered in turn (an exception: raised)."""
    exchange = Exchange(operation)
    calls: list[PodCall] = []
    scripted = list(answers)
    while (call := exchange.next_call()) is not None:
        calls.append(call)
        answer = scripted.pop(0)
        if isinstance(answer, Exception):
            exchange.failed(answer)
        else:
            exchange.answered(answer)
    assert not scripted, f"unanswered: {scripted}"
    return exchange.result, calls


def test_a_call_hands_the_client_only_the_keywords_it_sets() -> None:
    assert PodCall("GET", POD_PATH).keywords() == {}
    call = PodCall("DELETE", POD_PATH, params={"gracePeriodSeconds": 0}, json={"a": 1})
    assert call.keywords() == {"params": {"gracePeriodSeconds": 0}, "json": {"a": 1}}


def test_a_missing_pod_reads_as_none_and_other_errors_raise_where_it_was_read() -> None:
    assert drive(requests.get_pod("ns", "d"), {"metadata": {"name": "d"}})[0] == {
        "metadata": {"name": "d"}
    }
    assert drive(requests.get_pod("ns", "d"), status(404))[0] is None
    with pytest.raises(KubeApiError, match="status 403"):
        drive(requests.get_pod("ns", "d"), status(403))


def test_a_delete_takes_the_kueue_workload_with_the_pod_and_a_gone_pod_is_false() -> None:
    labels = {kueue.PREBUILT_LABEL: "spark-1"}
    admitted = {"metadata": {"name": "d", "namespace": "ns", "labels": labels}}
    deleted, calls = drive(requests.delete_pod("ns", "d", 0), admitted, status(404))
    assert deleted is True  # the Workload already gone is no error
    assert [(c.method, c.path, c.params) for c in calls] == [
        ("DELETE", POD_PATH, {"gracePeriodSeconds": 0}),
        ("DELETE", WORKLOAD_PATH, None),
    ]
    gone, calls = drive(requests.delete_pod("ns", "d"), status(404))
    assert gone is False and calls == [PodCall("DELETE", POD_PATH, absent=requests.NOT_FOUND)]


def test_a_kill_reads_then_deletes_with_preconditions_and_reads_again_after_a_409() -> None:
    live = {"metadata": {"name": "d", "namespace": "ns", "uid": "u1", "resourceVersion": "7"}}
    spared, calls = drive(requests.delete_if_owned("ns", "d", None), live, status(409), live, {})
    assert spared is None
    assert [c.method for c in calls] == ["GET", "DELETE", "GET", "DELETE"]
    assert calls[1].json == {"preconditions": {"uid": "u1", "resourceVersion": "7"}}
    gone, _ = drive(requests.delete_if_owned("ns", "d", 1), status(404))
    assert gone == Spare("it is already gone")


def test_an_unreadable_workload_leaves_the_view_and_a_missing_one_is_no_workload() -> None:
    view, calls = drive(requests.queue_view("ns", "spark-1", "cq"), status(404, WORKLOAD_PATH))
    assert view is not None and not view.found
    assert [c.path for c in calls] == [WORKLOAD_PATH]
    assert drive(requests.queue_view("ns", "spark-2", "cq"), status(500))[0] is None


def test_a_log_is_read_as_text_and_a_record_written_by_server_side_apply() -> None:
    text, calls = drive(requests.log_text("ns", "d", {"tailLines": "5"}), "last lines")
    assert text == "last lines" and calls[0].text and calls[0].path == f"{POD_PATH}/log"
    record = {"metadata": {"namespace": "ns", "name": "r"}, "data": {}}
    _, (apply,) = drive(requests.keep_result(record), {})
    assert (apply.method, apply.content_type) == ("PATCH", "application/apply-patch+yaml")
    assert drive(requests.drop_result("ns", "r"), status(404))[0] is False
    assert ABSENT is requests.Absent.ABSENT
