"""The blocking watch layers' own rules (the scenarios both faces share are in
test_watch_layers.py): no asyncio on their import path, a list counted with its version,
and layer 3 turning a 410 ERROR event into `Gone` after the events before it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_provider_sparkk8s.kube import listwatch, watch_sync
from airflow_provider_sparkk8s.kube.listwatch import WatchSpec, WatchStats
from tests.kube.fake_watch import Stream, SyncCollection, event, gone_event, pod

SPEC = WatchSpec("/api/v1/namespaces/ns/pods", {"labelSelector": "spark-role"}, timeout_seconds=30)


def test_importing_the_blocking_layers_loads_no_asyncio() -> None:
    code = "import sys, airflow_provider_sparkk8s.kube.watch_sync; print('asyncio' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_list_is_counted_and_carries_the_collections_version() -> None:
    listing = {"metadata": {"resourceVersion": "7"}, "items": [pod("a", 5), pod("b", 6)]}
    stats = WatchStats()
    listed = watch_sync.list_objects(SyncCollection([listing], []), SPEC, stats)  # type: ignore[arg-type]
    assert stats.lists == 1
    assert listed.resource_version == "7"
    assert [item["metadata"]["name"] for item in listed.items] == ["a", "b"]


def test_layer_3_yields_the_events_then_raises_gone_and_closes_the_stream() -> None:
    collection = SyncCollection([], [Stream([event("ADDED", "a", 8), gone_event()])])
    events = watch_sync.watch_stream(collection, SPEC, "7")  # type: ignore[arg-type]
    assert next(events) == event("ADDED", "a", 8)
    with pytest.raises(listwatch.Gone):
        next(events)
    assert collection.closed == 1
