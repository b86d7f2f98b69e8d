"""Spark's test for "a local dependency" (`KubernetesUtils.isLocalAndResolvable`)."""

from __future__ import annotations

import re

NO_RESOURCE = "spark-internal"  # SparkLauncher.NO_RESOURCE
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def uri_scheme(uri: str) -> str | None:
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else None


def is_local_dependency(uri: str) -> bool:
    """True for a bare path or a `file:` URI (what spark-submit would upload)."""
    return uri != NO_RESOURCE and uri_scheme(uri) in (None, "file")
