"""A succeeded application's result, kept until Airflow has recorded it: a pure model.

Airflow can fail a try whose application succeeded before the result reached it: its stale
executor event after a deferral (apache/airflow#67287, #72716) fails the resumed try, a
worker can die between the driver's end and the task's success. The next try would then
find the driver ended (and, by default, deleted) and run the whole application again.

So the try that completes a succeeded application first writes its result into a small
ConfigMap named after the task instance (`record_name`), labelled with the DAG run's clear
count, and only then deletes the driver as `on_finish_action` says. Airflow's success
callback, which runs once the success is recorded, deletes the record: that is the
delivery. A later try of the same task instance and the same clear finds the record and
delivers it instead of submitting again. A clear (the user's wish to run again) raises the
run's clear count: a record of an earlier clear is deleted, never delivered, and the task
submits anew. Where Airflow gives no clear count (3.0), no record is delivered: a clear
could not be told apart from a retry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.task_identity import (
    CLEAR_NUMBER_LABEL,
    LABEL_DOMAIN,
    TASK_INSTANCE_LABEL,
    TRY_NUMBER_LABEL,
    TaskInstanceRef,
)
from airflow_provider_sparkk8s.records import record

RESULT_LABEL = f"{LABEL_DOMAIN}/result"  # "succeeded": what kind of object this is
RESULT_KEY = "result.json"


def may_keep(ref: TaskInstanceRef) -> bool:
    """Whether a record can be kept at all: only under a known clear count (else a clear
    could not be told from a retry, and a clear would deliver instead of running again)."""
    return ref.clear_number is not None


def may_find_record(ref: TaskInstanceRef) -> bool:
    """Whether this try can find a record at all: only a later try of a known clear (a
    first try has no earlier one; a clear starts a new try too, and is told by its count)."""
    return ref.try_number > 1 and may_keep(ref)


def record_name(ref: TaskInstanceRef) -> str:
    """One record per task instance (a deterministic name: read with a GET, no list)."""
    return f"sparkk8s-result-{ref.digest}"


def result_record(
    ref: TaskInstanceRef,
    namespace: str,
    application: Mapping[str, Any],
    returned: Mapping[str, Any],
) -> dict[str, Any]:
    """The ConfigMap that keeps a succeeded application's XComs (the `spark_application`
    value and the return value, which hold no secret) until the success is delivered."""
    labels = {
        TASK_INSTANCE_LABEL: ref.digest,
        TRY_NUMBER_LABEL: str(ref.try_number),
        RESULT_LABEL: "succeeded",
    }
    if ref.clear_number is not None:
        labels[CLEAR_NUMBER_LABEL] = str(ref.clear_number)
    result = {"application": dict(application), "returned": dict(returned)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": record_name(ref), "namespace": namespace, "labels": labels},
        "data": {RESULT_KEY: json.dumps(result, sort_keys=True, default=str)},
    }


@record
class Undelivered:
    """A result to deliver: the XComs the succeeded try would have returned."""

    application: dict[str, Any]
    returned: dict[str, Any]
    try_number: int  # the try that completed the application


def _number(record: Mapping[str, Any], key: str) -> int | None:
    value = objects.labels(record).get(key)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _same_clear(record: Mapping[str, Any], ref: TaskInstanceRef) -> bool | None:
    """True/False when both clear counts are known, None when either is not."""
    recorded = _number(record, CLEAR_NUMBER_LABEL)
    if recorded is None or ref.clear_number is None:
        return None
    return recorded == ref.clear_number


def undelivered(record: Mapping[str, Any] | None, ref: TaskInstanceRef) -> Undelivered | None:
    """The result this try delivers instead of running the application again: a record of
    this task instance and this very clear; None otherwise (or if it cannot be read)."""
    if record is None or objects.labels(record).get(TASK_INSTANCE_LABEL) != ref.digest:
        return None
    if _same_clear(record, ref) is not True:
        return None
    try:
        result = json.loads(((record.get("data") or {}).get(RESULT_KEY)) or "")
    except ValueError:
        return None
    application, returned = result.get("application"), result.get("returned")
    if not isinstance(application, dict) or not isinstance(returned, dict):
        return None
    return Undelivered(application, returned, _number(record, TRY_NUMBER_LABEL) or 0)


def stale(record: Mapping[str, Any] | None, ref: TaskInstanceRef) -> bool:
    """A record this try must delete: of an earlier clear (the user asked for a new run)."""
    return record is not None and _same_clear(record, ref) is False
