"""The result record's model: written for a task instance and its clear, delivered only to a
later try of the same clear, dropped after a clear."""

from __future__ import annotations

import json
from dataclasses import replace

from airflow_provider_sparkk8s.application.task.delivery import (
    RESULT_KEY,
    Undelivered,
    may_find_record,
    may_keep,
    record_name,
    result_record,
    stale,
    undelivered,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef

REF = TaskInstanceRef("dag", "task", "run-1", try_number=1, clear_number=2)
APP = {"application_id": "spark-1", "state": "succeeded"}
RETURNED = {"status": "success", "duration_seconds": 12.5}


def record(ref: TaskInstanceRef = REF) -> dict:
    return result_record(ref, "ns", APP, RETURNED)


def test_a_record_is_named_after_the_task_instance_and_holds_no_more_than_its_xcoms():
    body = record()
    assert body["metadata"]["name"] == record_name(REF) == f"sparkk8s-result-{REF.digest}"
    assert len(body["metadata"]["name"]) <= 63
    assert json.loads(body["data"][RESULT_KEY]) == {"application": APP, "returned": RETURNED}
    assert body["metadata"]["labels"]["sparkk8s.io/clear-number"] == "2"


def test_a_later_try_of_the_same_clear_gets_the_result():
    later = replace(REF, try_number=2)
    assert may_find_record(later) and not may_find_record(REF)
    assert undelivered(record(), later) == Undelivered(APP, RETURNED, 1)
    assert not stale(record(), later)


def test_a_clear_never_delivers_an_earlier_clears_result_and_drops_it():
    cleared = replace(REF, try_number=3, clear_number=3)
    assert undelivered(record(), cleared) is None
    assert stale(record(), cleared)


def test_unknown_clear_counts_deliver_nothing():
    no_count = replace(REF, clear_number=None)
    assert not may_find_record(replace(no_count, try_number=2))
    assert undelivered(record(no_count), replace(REF, try_number=2)) is None
    assert undelivered(record(), replace(no_count, try_number=2)) is None
    assert not stale(record(no_count), REF)


def test_another_task_instances_or_an_unreadable_record_delivers_nothing():
    other = replace(REF, task_id="other", try_number=2)
    assert undelivered(record(), other) is None
    broken = record()
    broken["data"][RESULT_KEY] = "{not json"
    assert undelivered(broken, replace(REF, try_number=2)) is None
    assert undelivered(None, REF) is None
    assert undelivered({}, REF) is None


def test_a_record_is_kept_only_under_a_known_clear_count():
    assert may_keep(REF)
    assert not may_keep(replace(REF, clear_number=None))
