"""A Connect server's status for the task log: its executor pods through the API server, its
sessions from the driver UI's Connect tab (application/connect/status_lines.py reads both).

The UI is read at the host the clients dial (the `sc://` URL's: the driver Service or the pod
address) on the driver's UI port, the way the gRPC port is tried, so it needs no permission
beyond what the client already has (no pods/proxy). Environment proxies are not used, as for
the gRPC port. Whatever fails here becomes a line that says so: the status never fails a task.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_sparkk8s.application.connect import status_lines as rules
from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods, application_selector

READ_TIMEOUT_SECONDS = 5.0
MAX_PAGE_BYTES = 4 * 1024 * 1024


@record
class ServerStatus:
    executors: str
    sessions: str
    page: rules.ConnectPage | None


def read_connect_page(host: str, port: int) -> tuple[rules.ConnectPage | None, str | None]:
    """The Connect tab as read, or None and why."""
    url = f"http://{host}:{port}{rules.CONNECT_PAGE}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=READ_TIMEOUT_SECONDS) as answer:
            html = answer.read(MAX_PAGE_BYTES).decode("utf-8", "replace")
    except (OSError, urllib.error.URLError, ValueError) as error:
        return None, f"the driver UI at {host}:{port} did not answer: {error}"
    page = rules.parse_connect_page(html)
    return page, None if page else f"no Connect tab at {url}"


def executors_of(pods: DriverPods, namespace: str, application_id: str) -> str:
    try:
        listed = pods.list_pods(namespace, application_selector(application_id))
    except (KubeApiError, KubeConnectionError) as error:
        return f"executors unknown (listing the pods failed: {error})"
    return rules.executors_line(listed)


def server_status(
    pods: DriverPods, published: Mapping[str, Any], driver_pod: Mapping[str, Any] | None = None
) -> ServerStatus:
    """Executors and sessions of the server the setup published (its XCom)."""
    namespace = str(published["namespace"])
    executors = executors_of(pods, namespace, str(published["application_id"]))
    host = urlsplit(str(published["url"])).hostname
    if not host:
        return ServerStatus(executors, rules.sessions_line(None, "no host in the URL"), None)
    page, why = read_connect_page(host, rules.ui_port_of(driver_pod))
    return ServerStatus(executors, rules.sessions_line(page, why), page)
