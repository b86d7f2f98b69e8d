"""The tracked application: from a driver pod, and through a deferral's kwargs."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.following.tracked import (
    TrackedApplication,
    tracked_from_pod,
)


def test_a_pod_from_the_api_becomes_the_tracked_application():
    pod = {
        "metadata": {"name": "pi-1-driver", "namespace": "team-a", "creationTimestamp": "2026-11-29T18:00:00Z",
                     "labels": {"spark-app-selector": "spark-abc"}},
        "spec": {"containers": [{"name": "sidecar"}, {"name": "driver-from-template"}]},
    }  # fmt: skip
    tracked = tracked_from_pod(pod, adopted=True)
    assert tracked.driver_container == "driver-from-template"  # Spark's container is last
    assert tracked.submission_id == "team-a:pi-1-driver"
    assert TrackedApplication.from_kwargs(tracked.to_kwargs()) == tracked


def test_the_submissions_record_crosses_a_deferral_and_an_older_record_reads_as_none():
    tracked = TrackedApplication(
        "spark-abc", "team-a", "pi-1-driver", "spark-kubernetes-driver", "2026-11-29T18:00:00Z",
        queue_timeout=1800.0, spark_version="3.5.1", event_log=True,
    )  # fmt: skip
    assert TrackedApplication.from_kwargs(tracked.to_kwargs()) == tracked
    older = {
        k: v for k, v in tracked.to_kwargs().items() if k not in ("spark_version", "event_log")
    }
    back = TrackedApplication.from_kwargs(older)
    assert (back.spark_version, back.event_log) == (None, None)
