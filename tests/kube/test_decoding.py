"""Decoding answers: a list through a view, item by item and in steps; malformed lists."""

from __future__ import annotations

import json

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.decoding import ITEMS_PER_STEP, decode_json, decode_list_steps
from airflow_provider_sparkk8s.kube.request import build_request

LIST_REQUEST = build_request("GET", "/api/v1/namespaces/ns/pods")


def _names(pod):
    return {"name": pod["metadata"]["name"]}


def test_a_list_is_decoded_item_by_item_through_the_view() -> None:
    body = {
        "kind": "PodList",
        "metadata": {"resourceVersion": "42"},
        "items": [{"metadata": {"name": f"p{i}", "uid": str(i)}, "spec": {}} for i in range(3)],
    }
    seen = []

    def view(item):
        seen.append(item)
        return _names(item)

    for text in (json.dumps(body), json.dumps(body, indent=2), json.dumps(body) + "\n"):
        seen.clear()
        decoded = decode_json(LIST_REQUEST, text.encode(), view)
        assert decoded == {**body, "items": [{"name": "p0"}, {"name": "p1"}, {"name": "p2"}]}
        assert seen == body["items"]  # every item whole, one call each
    assert decode_json(LIST_REQUEST, b'{"items":[]}', view) == {"items": []}
    assert decode_json(LIST_REQUEST, b" { } ", view) == {}
    assert decode_json(LIST_REQUEST, b'{"items":null,"x":"\xc3\xa9"}', view) == {
        "items": None,
        "x": "\u00e9",
    }


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1 "b":2}',
        '{"a":1,}',
        '{"items":[{}{}]}',
        '{"items":[1,]}',
        '{"items":[1 2]}',
        '{"items":[',
        '{"a":1}x',
        "{1:2}",
        "[1]",
        "nul",
    ],
)
def test_a_malformed_list_is_an_invalid_response_with_a_view(text: str) -> None:
    with pytest.raises(KubeApiError, match="not JSON"):
        decode_json(LIST_REQUEST, text.encode(), lambda item: item)


def test_a_long_list_is_decoded_in_steps_that_let_others_run() -> None:
    items = [{"metadata": {"name": f"p{i}"}} for i in range(2 * ITEMS_PER_STEP + 1)]
    steps = decode_list_steps(LIST_REQUEST, json.dumps({"items": items}).encode(), _names)
    paused = 0
    decoded = None
    while decoded is None:
        try:
            next(steps)
            paused += 1
        except StopIteration as done:
            decoded = done.value
    assert decoded == {"items": [_names(item) for item in items]}
    assert paused == 2
