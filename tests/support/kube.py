"""Plain-JSON requests and watches through a `kubernetes` ApiClient (its auth
and TLS), so set-up and assertions work on dicts shaped like the API's JSON
rather than on the client's generated models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException


def request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    params: dict[str, str] | None = None,
) -> Any:
    """One request; returns the decoded JSON body, raises ApiException on non-2xx."""
    method, url, headers, body, post_params = api.param_serialize(
        method,
        path,
        query_params=list((params or {}).items()),
        header_params={"Accept": "application/json", "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, headers, body, post_params)
    response.read()
    text = response.data.decode() if response.data else ""
    if not 200 <= response.status <= 299:
        raise ApiException(status=response.status, reason=response.reason, body=text)
    return json.loads(text) if text else None


def watch(
    api: ApiClient, path: str, resource_version: str, timeout_seconds: int = 30
) -> Iterator[dict[str, Any]]:
    """Watch events ({"type": ..., "object": {...}}) from `resource_version` until
    the server ends the watch after `timeout_seconds` or the caller stops iterating."""
    params = {
        "watch": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": str(timeout_seconds),
    }
    method, url, headers, _, _ = api.param_serialize(
        "GET",
        path,
        query_params=list(params.items()),
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, headers, _request_timeout=timeout_seconds + 10)
    stream = response.response
    try:
        if response.status != 200:
            raise ApiException(status=response.status, reason=response.reason)
        for line in stream:
            if line.strip():
                yield dict(json.loads(line))
    finally:
        stream.release_conn()
