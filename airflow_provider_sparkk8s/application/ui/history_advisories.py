"""Known vulnerabilities of Spark History Servers, by the version its REST API reports.

The History Server the connection's `history_server_url` names renders event logs that DAG
authors' drivers write: a server with a known flaw there lets a DAG author reach the server's
host (the event log deserialization) or a reader's browser (unescaped pages). The operator
asks the server for `GET <url>/api/v1/version` (`{"spark": "3.5.6"}`) and names each issue
here in one warning; an unknown or unreadable version names nothing.

Sources (checked 2026-12-06): CVE-2025-54920 (GHSA-jwp6-cvj8-fw65, "before 3.5.7 and
4.0.1": Jackson polymorphic deserialization of event log data runs code in the History
Server) and CVE-2026-32773 (GHSA-9437-39hj-3c93, PYSEC-2026-3966: no XSS escaping in the
History Server before 3.5.8; affected range 3.0.0 to 3.5.7).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_sparkk8s.records import record

Version = tuple[int, int, int]
_VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?")


@record
class KnownIssue:
    """One advisory: its id, what it lets an attacker do, and the releases that fix it."""

    cve: str
    summary: str
    fixed_in: tuple[str, ...]


EVENT_LOG_RCE = KnownIssue(
    "CVE-2025-54920",
    "code execution on the History Server's host from a crafted event log",
    ("3.5.7", "4.0.1"),
)
HISTORY_XSS = KnownIssue(
    "CVE-2026-32773",
    "unescaped History Server pages (XSS) from a malicious application",
    ("3.5.8",),
)


def parse_version(text: object) -> Version | None:
    """`3.5.6`, `4.0.0-preview2`, `3.5.1-amzn-0` -> (major, minor, patch); None otherwise."""
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def known_issues(version: str | None) -> tuple[KnownIssue, ...]:
    """The known issues of a History Server of `version` (empty when unknown or fixed)."""
    parsed = parse_version(version)
    if parsed is None:
        return ()
    issues = []
    if parsed < (3, 5, 7) or (4, 0, 0) <= parsed < (4, 0, 1):
        issues.append(EVENT_LOG_RCE)
    if (3, 0, 0) <= parsed < (3, 5, 8):
        issues.append(HISTORY_XSS)
    return tuple(issues)


def shown_url(url: str) -> str:
    """The URL without user info, query or fragment: a URL may carry credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:  # not a number: shown without it
        port = None
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def warning(url: str, version: str, issues: tuple[KnownIssue, ...]) -> str:
    """The task log's one line: the server, its version, each issue with its fixes."""
    named = "; ".join(
        f"{issue.cve}: {issue.summary} (fixed in {' and '.join(issue.fixed_in)})"
        for issue in issues
    )
    return (
        f"The History Server at {shown_url(url)} runs Spark {version}, which has known "
        f"vulnerabilities: {named}. Upgrade the History Server."
    )
