"""The result records of `application.task.delivery`, read, written and dropped through the pods
service. A record is a convenience that spares a rerun: a failure to read or write one is a
warning, never the task's failure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.application.task.delivery import (
    Undelivered,
    may_find_record,
    may_keep,
    record_name,
    result_record,
    stale,
    undelivered,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.errors import SparkK8sError
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log


def kept_result(
    pods: DriverPods, ref: TaskInstanceRef, namespace: str, log: Log
) -> Undelivered | None:
    """The undelivered result of this task instance's clear, if an earlier try left one;
    a record of an earlier clear is dropped (the user asked for a new run)."""
    if not may_find_record(ref):
        return None
    name = record_name(ref)
    try:
        record = pods.result_record(namespace, name)
        if stale(record, ref):
            pods.drop_result(namespace, name)
            log.info("Dropped the result record %s/%s of an earlier clear", namespace, name)
            return None
    except SparkK8sError as error:
        log.warning("Could not read the result record %s/%s: %s", namespace, name, error)
        return None
    return undelivered(record, ref)


def keep_result(
    pods: DriverPods,
    ref: TaskInstanceRef,
    namespace: str,
    application: Mapping[str, Any],
    returned: Mapping[str, Any],
    log: Log,
) -> bool:
    """Write the succeeded application's record, until Airflow records the success."""
    if not may_keep(ref):  # Airflow 3.0 gives no clear count
        return False
    try:
        pods.keep_result(result_record(ref, namespace, application, returned))
    except SparkK8sError as error:
        log.warning("Could not keep the result of %s until delivered: %s", ref.describe(), error)
        return False
    return True


def drop_result(pods: DriverPods, ref: TaskInstanceRef, namespace: str, log: Log) -> None:
    """The result is delivered (Airflow recorded the success): its record goes."""
    name = record_name(ref)
    try:
        if pods.drop_result(namespace, name):
            log.info("Result delivered: deleted its record %s/%s", namespace, name)
    except SparkK8sError as error:
        log.warning("Could not delete the result record %s/%s: %s", namespace, name, error)
