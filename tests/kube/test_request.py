"""Request building as plain data: bodies, content types, headers, idempotence."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.kube.request import APPLY_PATCH, METADATA_LIST, build_request


def test_build_request_json_patch_defaults_to_merge_patch() -> None:
    request = build_request("patch", "/api/v1/namespaces/ns/pods/p", json={"a": 1})
    assert request.method == "PATCH"
    assert request.content == b'{"a":1}'
    assert request.content_type == "application/merge-patch+json"
    assert not request.idempotent


def test_a_request_asks_for_json_unless_it_names_its_own_accept() -> None:
    assert build_request("GET", "/x").headers()["Accept"] == "application/json, */*"
    metadata = build_request("GET", "/x", accept=METADATA_LIST).headers()["Accept"]
    assert metadata.startswith("application/json;as=PartialObjectMetadataList;g=meta.k8s.io")


def test_build_request_apply_is_idempotent_post_is_not() -> None:
    apply = build_request("PATCH", "/x", content="a: 1", content_type=APPLY_PATCH)
    assert apply.idempotent and apply.content == b"a: 1"
    assert not build_request("POST", "/x", json={}).idempotent
    assert build_request("DELETE", "/x").idempotent
    with pytest.raises(TypeError):
        build_request("POST", "/x", json={}, content="y", content_type="text/plain")
    with pytest.raises(ValueError, match="must be absolute"):
        build_request("GET", "api/v1")
