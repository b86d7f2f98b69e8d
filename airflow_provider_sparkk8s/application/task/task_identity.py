"""Which Airflow task instance a driver pod belongs to, written as pod labels.

A worker that restarts, or a second worker racing the first, finds the driver of its task
instance by these labels alone. Label values allow 63 characters of `[A-Za-z0-9._-]`, so the
readable labels are sanitised and shortened, and the one the selector uses is a hash of the
exact identity (two sanitised values may collide; the hash does not).

Driver pods get a deterministic name per (task instance, submission number): two workers
that both decide to submit submission N race on the same name, the API server lets one
create it, and the other gets 409 and adopts it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.naming import resource_name_prefix

LABEL_DOMAIN = "sparkk8s.io"
TASK_INSTANCE_LABEL = f"{LABEL_DOMAIN}/task-instance"  # the hash; what selectors use
DAG_ID_LABEL = f"{LABEL_DOMAIN}/dag-id"
TASK_ID_LABEL = f"{LABEL_DOMAIN}/task-id"
RUN_ID_LABEL = f"{LABEL_DOMAIN}/run-id"
MAP_INDEX_LABEL = f"{LABEL_DOMAIN}/map-index"
TRY_NUMBER_LABEL = f"{LABEL_DOMAIN}/try-number"
# Airflow's count of clears of the DAG run when the driver was submitted: a driver of an
# earlier clear is never adopted (a clear runs the task afresh; see application/task/reattach.py).
CLEAR_NUMBER_LABEL = f"{LABEL_DOMAIN}/clear-number"
SUBMISSION_LABEL = f"{LABEL_DOMAIN}/submission"  # 1, 2, ... per task instance
# The exact identity, as JSON (labels are sanitised): what the leftover-driver clean-up asks
# Airflow about.
TASK_INSTANCE_ANNOTATION = f"{LABEL_DOMAIN}/task-instance-key"

LABEL_VALUE_MAX = 63
_NAME_PART_MAX = 30  # app-name part of the driver pod name, keeps the name within 63 chars
_HASH_IN_NAME = 10


@record
class TaskInstanceRef:
    """The identity of one task instance; try_number and clear_number (the DAG run's count
    of clears, None when Airflow gives none) are recorded but not part of it."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int = -1
    try_number: int = 1
    clear_number: int | None = None

    def describe(self) -> str:
        """`dag.task[map index] of run <run id>`, as a person reads it."""
        index = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{self.dag_id}.{self.task_id}{index} of run {self.run_id}"

    @property
    def key(self) -> str:
        """The exact identity as JSON: `[dag_id, task_id, run_id, map_index]`."""
        return json.dumps([self.dag_id, self.task_id, self.run_id, self.map_index])

    @property
    def digest(self) -> str:
        """40 hex chars of sha256 over the exact identity (fits a label value)."""
        return hashlib.sha256(self.key.encode()).hexdigest()[:40]

    @staticmethod
    def from_context(context: Mapping[str, Any]) -> TaskInstanceRef:
        ti = context["ti"]
        map_index = getattr(ti, "map_index", -1)
        clear_number = getattr(context.get("dag_run"), "clear_number", None)
        return TaskInstanceRef(
            dag_id=ti.dag_id,
            task_id=ti.task_id,
            run_id=ti.run_id,
            map_index=-1 if map_index is None else int(map_index),
            try_number=int(getattr(ti, "try_number", 1) or 1),
            clear_number=clear_number if isinstance(clear_number, int) else None,
        )


def label_value(text: str) -> str:
    """A valid label value that still reads like `text`; long values end in a short hash."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", text)
    cleaned = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned)
    if len(cleaned) <= LABEL_VALUE_MAX:
        return cleaned
    tail = hashlib.sha256(text.encode()).hexdigest()[:10]
    head = re.sub(r"[^A-Za-z0-9]+$", "", cleaned[: LABEL_VALUE_MAX - len(tail) - 1])
    return f"{head}-{tail}"


def selector(ref: TaskInstanceRef) -> str:
    """Label selector for every driver pod this task instance ever submitted."""
    return f"{TASK_INSTANCE_LABEL}={ref.digest},spark-role=driver"


def pods_selector(ref: TaskInstanceRef) -> str:
    """Label selector for every pod of this task instance: drivers and their executors
    (what cost tools group by)."""
    return f"{TASK_INSTANCE_LABEL}={ref.digest}"


def driver_labels(ref: TaskInstanceRef, submission: int) -> dict[str, str]:
    """Labels put on the driver pod through `spark.kubernetes.driver.label.*`."""
    clear = {} if ref.clear_number is None else {CLEAR_NUMBER_LABEL: str(ref.clear_number)}
    return {
        TASK_INSTANCE_LABEL: ref.digest,
        DAG_ID_LABEL: label_value(ref.dag_id),
        TASK_ID_LABEL: label_value(ref.task_id),
        RUN_ID_LABEL: label_value(ref.run_id),
        # "-1" is not a valid label value (it must start with a letter or digit).
        MAP_INDEX_LABEL: str(ref.map_index) if ref.map_index >= 0 else "none",
        TRY_NUMBER_LABEL: str(ref.try_number),
        SUBMISSION_LABEL: str(submission),
        **clear,
    }


def driver_label_conf(ref: TaskInstanceRef, submission: int) -> dict[str, str]:
    """The labels, and the exact identity as an annotation, as driver conf keys."""
    labels = {
        f"spark.kubernetes.driver.label.{key}": value
        for key, value in driver_labels(ref, submission).items()
    }
    return {**labels, f"spark.kubernetes.driver.annotation.{TASK_INSTANCE_ANNOTATION}": ref.key}


def executor_label_conf(ref: TaskInstanceRef, submission: int) -> dict[str, str]:
    """The same labels on every executor (`spark.kubernetes.executor.label.*`), so the pods
    the driver creates, dynamically allocated ones too, are found by `pods_selector`."""
    return {
        f"spark.kubernetes.executor.label.{key}": value
        for key, value in driver_labels(ref, submission).items()
    }


def ref_of_pod(pod: Mapping[str, Any]) -> TaskInstanceRef | None:
    """The task instance a driver pod was submitted for, from its annotation; None when the
    pod has none, or one that does not match its task-instance label (not ours to judge)."""
    text = objects.annotation(pod, TASK_INSTANCE_ANNOTATION)
    if text is None:
        return None
    try:
        dag_id, task_id, run_id, map_index = json.loads(text)
        ref = TaskInstanceRef(str(dag_id), str(task_id), str(run_id), int(map_index))
    except (TypeError, ValueError):
        return None
    return ref if objects.labels(pod).get(TASK_INSTANCE_LABEL) == ref.digest else None


def driver_pod_name(app_name: str, ref: TaskInstanceRef, submission: int) -> str:
    """`<app name>-<hash>-<submission>-driver`, a DNS-1123 label (at most 63 chars)."""
    name_part = resource_name_prefix(app_name[:_NAME_PART_MAX], ref.digest[:_HASH_IN_NAME])
    return f"{name_part}-{submission}-driver"


def _number_label(pod: Mapping[str, Any], key: str) -> int | None:
    value = objects.labels(pod).get(key, "")
    return int(value) if isinstance(value, str) and value.isdigit() else None


def submission_number(pod: Mapping[str, Any]) -> int:
    """The submission number a driver pod carries; 0 when the label is absent or odd."""
    return _number_label(pod, SUBMISSION_LABEL) or 0


def try_number_of(pod: Mapping[str, Any]) -> int:
    """The try that submitted a driver pod; 0 when the label is absent or odd."""
    return _number_label(pod, TRY_NUMBER_LABEL) or 0


def clear_number_of(pod: Mapping[str, Any]) -> int | None:
    """The DAG run's clear count when the pod was submitted; None when it carries none
    (submitted before this label existed, or on an Airflow that gives none)."""
    return _number_label(pod, CLEAR_NUMBER_LABEL)
