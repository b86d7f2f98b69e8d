"""One API request as plain data: method, path, query, body and the headers it implies.

The sync and async senders build the same `KubeRequest` for the same call, so what a
request is (and whether it is safe to send twice) is decided once, here.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Callable, Mapping
from dataclasses import field

from airflow_provider_sparkk8s import __version__
from airflow_provider_sparkk8s.records import record

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any, TypedDict, Unpack

USER_AGENT = f"airflow-provider-sparkk8s/{__version__}"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
# A list of metadata only (name, uid, resourceVersion, labels...), half a pod's bytes; a
# server that cannot convert answers the plain list, whose items carry the same metadata.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


@record
class KubeRequest:
    """One API request as plain data; auth headers are added at send time."""

    method: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    content: bytes | None = None
    content_type: str | None = None
    accept: str | None = None

    @property
    def idempotent(self) -> bool:
        """Safe to send twice: the second try cannot do anything the first did not."""
        if self.method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS"):
            return True
        return self.method == "PATCH" and self.content_type == APPLY_PATCH

    def headers(self) -> dict[str, str]:
        # As kubectl: JSON, but plain-text resources (pods/log) must not be refused with 406.
        headers = {"Accept": self.accept or "application/json, */*", "User-Agent": USER_AGENT}
        if self.content_type:
            headers["Content-Type"] = self.content_type
        return headers


# What a list's caller keeps of each item, applied while the answer is decoded (`decoding`).
ItemView = Callable[[Mapping[str, "Any"]], "Any"]


if TYPE_CHECKING:

    class RequestFields(TypedDict, total=False):
        """A call's keywords besides its method and path: both senders' `request` (and what the
        watch layers need of it) declared once. `each_item` is no part of the request itself:
        it is how a list's answer is decoded."""

        params: Mapping[str, Any] | None
        json: Any
        content: bytes | str | None
        content_type: str | None
        accept: str | None
        each_item: ItemView | None


def build_request(method: str, path: str, **fields: Unpack[RequestFields]) -> KubeRequest:
    """Plain data for one request. A JSON PATCH body defaults to merge-patch."""
    method = method.upper()
    params, json, content = fields.get("params"), fields.get("json"), fields.get("content")
    content_type, accept = fields.get("content_type"), fields.get("accept")
    if json is not None and content is not None:
        raise TypeError("give json or content, not both")
    body: bytes | None
    if json is not None:
        body = jsonlib.dumps(json, separators=(",", ":")).encode()
        content_type = content_type or (MERGE_PATCH if method == "PATCH" else "application/json")
    elif content is not None:
        body = content.encode() if isinstance(content, str) else content
        if content_type is None:
            raise TypeError("content needs a content_type")
    else:
        body = None
    if not path.startswith("/"):
        raise ValueError(f"API path must be absolute: {path!r}")
    return KubeRequest(method, path, dict(params or {}), body, content_type, accept)


def watch_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """A watch request's query: `watch=1` and bookmarks unless the caller said otherwise."""
    merged = dict(params or {})
    merged["watch"] = "1"
    merged.setdefault("allowWatchBookmarks", "true")
    return merged
