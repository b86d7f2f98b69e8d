"""The tracked application: from a driver pod, and through a deferral's kwargs."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.tracked import TrackedApplication, tracked_from_pod


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
