"""Readers of Kubernetes objects: a missing or mistyped field reads as absent, never raises."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s import objects


def pod(role="driver", created="2025-01-01T00:00:00Z", **metadata):
    labels = {"spark-role": role, "spark-app-selector": "spark-1", "spark-exec-id": "3"}
    return {"kind": "Pod", "metadata": {"creationTimestamp": created, "labels": labels, **metadata}}


def test_readers_find_each_field():
    p = pod(name="d", namespace="ns", uid="u", resourceVersion=7)
    p["metadata"]["annotations"] = {"spark.exit-exception": "boom"}
    assert (objects.name(p), objects.namespace(p), objects.uid(p)) == ("d", "ns", "u")
    assert (objects.application_id(p), objects.spark_role(p), objects.executor_id(p)) == (
        "spark-1", "driver", "3",
    )  # fmt: skip
    assert objects.annotation(p, "spark.exit-exception") == "boom"
    assert objects.resource_version(p) == "7"
    assert objects.created_at(p) == "2025-01-01T00:00:00Z"
    assert objects.describe(p) == "Pod/d"


@pytest.mark.parametrize(
    "odd", [{}, {"metadata": None}, {"metadata": "x"}, {"metadata": {"labels": [], "name": 5}}]
)
def test_odd_objects_read_as_absent(odd):
    assert objects.name(odd) is None and objects.namespace(odd) is None
    assert objects.uid(odd) is None and objects.labels(odd) == {}
    assert objects.application_id(odd) is None and objects.spark_role(odd) is None
    assert objects.annotation(odd, "k") is None and not objects.being_deleted(odd)
    assert objects.created_at(odd) == "" and objects.resource_version(odd) is None


def test_being_deleted_reads_the_deletion_timestamp():
    assert objects.being_deleted(pod(deletionTimestamp="2025-01-01T00:00:01Z"))
    assert not objects.being_deleted(pod())


def test_newest_driver_is_the_latest_created_driver():
    old, new = pod(name="old"), pod(name="new", created="2025-01-02T00:00:00Z")
    executor = pod("executor", name="e", created="2026-01-01T00:00:00Z")
    assert objects.newest_driver([old, executor, new]) is new
    assert objects.newest_driver([executor]) is None
    assert objects.newest_driver([]) is None
    twin = pod(name="twin")
    assert objects.newest_driver([old, twin]) is old  # a tie keeps the first


def test_quantities() -> None:
    assert [objects.quantity(v) for v in ("500m", "2", "1Gi", "1.5", "1e3", "x")] == [
        0.5, 2.0, 2.0**30, 1.5, 1000.0, 0.0
    ]  # fmt: skip
