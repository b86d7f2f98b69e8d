"""The same Spark UI link after the driver is gone: the application served from a Spark
History Server (docs/spark_ui.md). Pure: when the plugin falls back, which History Server
path a page is, and how its Location headers map back.

The History Server writes its links under the path a proxy names in `X-Forwarded-Context`
(Spark's `UIUtils.uiRoot`, the same on 3.5 and 4.x), so its pages need no rewriting: the
plugin sends the task instance's base there, and the History Server's own paths
(`/history/<app>/jobs/`, `/static/...`, `/api/v1/...`) live under that base.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlsplit, urlunsplit

from airflow_provider_sparkk8s.application.ui.live_ui import UnsafePath

HISTORY_SERVER_URL_OPTION = "history_server_url"
FORWARDED_CONTEXT_HEADER = "x-forwarded-context"
# The History Server's own top-level paths; anything else is a page of the application.
_SERVER_PATHS = ("history/", "api/", "static/")


def driver_gone(status: int, content_type: str | None, body_head: bytes) -> bool:
    """Whether kube-apiserver's pod-proxy answer says the driver's UI is gone: the pod is
    deleted (404, a Status about pods) or no longer serves (503, the API server could not
    reach it). A 404 of the driver's own UI is HTML, and stays the driver's."""
    if status == 503:
        return True
    if status != 404 or "json" not in (content_type or ""):
        return False
    try:
        answer = json.loads(body_head)
    except ValueError:
        return False
    details = answer.get("details") if isinstance(answer, dict) else None
    return (
        isinstance(answer, dict)
        and answer.get("kind") == "Status"
        and isinstance(details, dict)
        and details.get("kind") == "pods"
    )


def head_needs_a_get(method: str, status: int, content_type: str | None) -> bool:
    """Whether a HEAD's 404 must be asked again as a GET to tell who answered: a HEAD has
    no body, and only the body tells the API server's Status about the deleted pod from a
    JSON 404 of the driver's own REST API. The Status is small; an HTML 404 is the driver's."""
    return method == "HEAD" and status == 404 and "json" in (content_type or "")


def unavailable_reason(history_server_url: str | None, conn_id: str) -> str:
    """Why a gone driver's page cannot come from a History Server: none is configured, or
    the application's id is unknown (the operator publishes it once the driver exists)."""
    if history_server_url is None:
        return (
            "no History Server is configured (the history_server_url extra of connection "
            f"{conn_id!r}, or [sparkk8s] history_server_url)"
        )
    return "its operator published no application id (XCom spark_application)"


def gone_detail(namespace: str, driver_pod: str, reason: str) -> str:
    """The plugin's own 404 for a deleted driver it cannot serve from a History Server."""
    return f"The Spark driver pod {namespace}/{driver_pod} is gone, and {reason}."


def _check(rest: str) -> None:
    if any(segment in (".", "..") for segment in (rest.split("/") if rest else [])):
        raise UnsafePath(f"dot segments are not proxied: {rest!r}")


def is_server_path(rest: str) -> bool:
    """A path of the History Server itself (its pages, scripts and REST API)."""
    _check(rest)
    return rest.startswith(_SERVER_PATHS)


def history_page(rest: str, application_id: str, base: str) -> str:
    """Where a page of the driver's UI (`jobs/`, `stages/stage/?id=1`, "" for its root) is
    on the History Server, under `base`: the browser is sent there, since the UI's scripts
    read the application id from the page's own path (`.../history/<app>/...`)."""
    _check(rest)
    return f"{base}/history/{quote(application_id, safe='')}/{rest or 'jobs/'}"


def upstream_url(history_server_url: str, path: str, query: str) -> str:
    """`path` under the History Server's URL (which may have a path of its own: an ingress)."""
    parts = urlsplit(history_server_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path, query=query))


def browser_location(location: str, history_server_url: str, base: str) -> str:
    """A History Server redirect as the browser must follow it: a path on the History
    Server (absolute or not) goes under `base`, unless it is there already."""
    parts = urlsplit(location)
    server = urlsplit(history_server_url)
    if parts.netloc and parts.netloc != server.netloc:
        return location  # somewhere else entirely
    path = parts.path
    own = server.path.rstrip("/")
    if own and (path == own or path.startswith(own + "/")):
        path = path[len(own) :]
    if not (path == base or path.startswith(base + "/")):
        path = base + path
    return urlunsplit(("", "", path, parts.query, parts.fragment))
