"""The rules the watch layers share, on plain dicts."""

from __future__ import annotations

import time

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.listwatch import (
    Gone,
    Listed,
    WatchCursor,
    WatchSpec,
    check_stream_end,
    checked_event,
    gone_or_same,
)


def test_stream_params_resume_with_bookmarks_and_a_jittered_timeout() -> None:
    spec = WatchSpec("/api/v1/pods", {"fieldSelector": "metadata.name=d"}, timeout_seconds=100)
    timeouts = set()
    for _ in range(50):
        params = spec.stream_params("42")
        assert params["fieldSelector"] == "metadata.name=d"
        assert params["resourceVersion"] == "42" and params["allowWatchBookmarks"] == "true"
        timeouts.add(int(params["timeoutSeconds"]))
    assert min(timeouts) >= 80 and max(timeouts) <= 100 and len(timeouts) > 1
    assert WatchSpec("/x", timeout_seconds=0.5).stream_params(None)["timeoutSeconds"] == "1"


def test_error_events_become_errors_and_410_means_gone() -> None:
    added = {"type": "ADDED", "object": {}}
    assert checked_event(added, "/p") is added
    with pytest.raises(Gone):
        checked_event({"type": "ERROR", "object": {"code": 410, "message": "old"}}, "/p")
    with pytest.raises(KubeApiError) as raised:
        checked_event({"type": "ERROR", "object": {"code": 403, "reason": "Forbidden"}}, "/p")
    assert raised.value.status == 403 and raised.value.path == "/p"
    expired = KubeApiError(410, "Expired", "too old", method="GET", path="/p")
    assert isinstance(gone_or_same(expired), Gone)
    refused = KubeApiError(403, "Forbidden", "no", method="GET", path="/p")
    assert gone_or_same(refused) is refused


def test_the_cursor_follows_every_object_version_bookmarks_included() -> None:
    cursor = WatchCursor("1")
    cursor.advance({"type": "ADDED", "object": {"metadata": {"resourceVersion": "5"}}})
    cursor.advance({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
    cursor.advance({"type": "MODIFIED", "object": "not a mapping"})
    cursor.advance({"type": "MODIFIED", "object": {"metadata": {}}})
    assert cursor.resource_version == "9"


def test_a_list_keeps_its_objects_and_version() -> None:
    body = {"metadata": {"resourceVersion": "7"}, "items": [{"metadata": {}}, "junk"]}
    listed = Listed.from_body(body, started=3.0)
    assert listed.items == ({"metadata": {}},) and listed.resource_version == "7"
    assert Listed.from_body({}, 0.0) == Listed((), None, 0.0)


def test_only_an_empty_stream_that_ended_at_once_is_a_failure() -> None:
    now = time.monotonic()
    with pytest.raises(ConnectionError):
        check_stream_end(0, now)
    check_stream_end(1, now)  # events came: a normal end
    check_stream_end(0, now - 5)  # the server's timeout with nothing to say
