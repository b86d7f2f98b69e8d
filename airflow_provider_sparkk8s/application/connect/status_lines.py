"""What a Connect server is doing, as task-log lines; pure: its executor pods as read, and its
sessions as the driver's UI shows them.

Spark 4 has no REST endpoint for Connect sessions: the status API (`/api/v1`) knows jobs and
executors only. The driver UI's Connect tab (`/connect/`) renders them: a heading "N
session(s) are online, running M Request(s)", "Session Statistics (N)" and "Request
Statistics (N)", and a session table whose rows are user, session id (a link to
`session/?id=`), start, finish (empty while the session lives), duration, and requests run.
This reads those, and only those; a page it does not recognise gives None, never an error,
since the status is for reading and must not fail a task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from html.parser import HTMLParser
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.ui.live_ui import DEFAULT_UI_PORT
from airflow_provider_sparkk8s.monitoring.reducer import DRIVER_CONTAINER
from airflow_provider_sparkk8s.records import record

CONNECT_PAGE = "/connect/"
UI_PORT_NAME = "spark-ui"
SESSION_CELLS = 6  # user, id, start, finish, duration, requests
SHOWN_SESSIONS = 10

_ONLINE = re.compile(
    r"(\d+)\s+session\(s\)\s+are\s+online,\s+running\s+(\d+)\s+Request", re.IGNORECASE
)
_SESSION_TOTAL = re.compile(r"Session Statistics\s*\((\d+)\)")
_REQUEST_TOTAL = re.compile(r"Request Statistics\s*\((\d+)\)")


@record
class Session:
    user: str
    session_id: str
    live: bool
    requests: int | None


@record
class ConnectPage:
    online: int
    running_requests: int
    sessions_served: int
    requests_served: int
    sessions: tuple[Session, ...]  # the first page of the UI's table

    @property
    def live_sessions(self) -> tuple[Session, ...]:
        return tuple(session for session in self.sessions if session.live)


class _Rows(HTMLParser):
    """Every table row as its cells' text, with the first session link's id per row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[list[str], str | None]] = []
        self._cells: list[str] | None = None
        self._link: str | None = None
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self._cells, self._link = [], None
        elif tag == "td" and self._cells is not None:
            self._cells.append("")
            self._in_cell = True
        elif tag == "a" and self._cells is not None and self._link is None:
            href = dict(attrs).get("href") or ""
            if "/session/?id=" in href:
                self._link = href

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_cell = False
        elif tag == "tr" and self._cells is not None:
            self.rows.append(([" ".join(cell.split()) for cell in self._cells], self._link))
            self._cells = None

    def handle_data(self, data: str) -> None:
        if self._in_cell and self._cells:
            self._cells[-1] += data


def parse_connect_page(html: str) -> ConnectPage | None:
    """The Connect tab's counts and session rows; None when the page is not that tab."""
    online = _ONLINE.search(html)
    if online is None:
        return None
    rows = _Rows()
    rows.feed(html)
    sessions = tuple(
        Session(cells[0], cells[1], not cells[3], int(cells[5]) if cells[5].isdigit() else None)
        for cells, link in rows.rows
        if len(cells) == SESSION_CELLS and link is not None and cells[1]
    )
    session_total = _SESSION_TOTAL.search(html)
    request_total = _REQUEST_TOTAL.search(html)
    return ConnectPage(
        online=int(online.group(1)),
        running_requests=int(online.group(2)),
        sessions_served=int(session_total.group(1)) if session_total else len(sessions),
        requests_served=int(request_total.group(1)) if request_total else 0,
        sessions=sessions,
    )


def ui_port_of(driver_pod: Mapping[str, Any] | None) -> int:
    """The driver's UI port, as its container declares it (Spark names it spark-ui)."""
    for container in ((driver_pod or {}).get("spec") or {}).get("containers") or []:
        if container.get("name") != DRIVER_CONTAINER:
            continue
        for port in container.get("ports") or []:
            if port.get("name") == UI_PORT_NAME and port.get("containerPort"):
                return int(port["containerPort"])
    return DEFAULT_UI_PORT


def executors_line(pods: Iterable[Mapping[str, Any]]) -> str:
    """'2 executors: name (Running), name (Pending, being deleted)' from the pods as read."""
    executors = sorted(
        (pod for pod in pods if objects.spark_role(pod) == "executor"),
        key=lambda pod: objects.name(pod) or "",
    )
    if not executors:
        return "no executors"
    described = []
    for pod in executors:
        phase = str((pod.get("status") or {}).get("phase") or "Pending")
        deleting = ", being deleted" if objects.being_deleted(pod) else ""
        described.append(f"{objects.name(pod)} ({phase}{deleting})")
    count = len(executors)
    return f"{count} executor{'s' if count != 1 else ''}: " + ", ".join(described)


def sessions_line(page: ConnectPage | None, why_unread: str | None = None) -> str:
    """The live sessions (their ids and users), what runs now, and what was served."""
    if page is None:
        return f"sessions unknown ({why_unread or 'the Connect tab was not recognised'})"
    live = page.live_sessions
    shown = ", ".join(f"{s.session_id} ({s.user})" for s in live[:SHOWN_SESSIONS])
    more = f" and {len(live) - SHOWN_SESSIONS} more" if len(live) > SHOWN_SESSIONS else ""
    listed = f": {shown}{more}" if shown else ""
    return (
        f"{page.online} session(s) online{listed}; {page.running_requests} request(s) running; "
        f"{page.sessions_served} session(s) and {page.requests_served} request(s) since start"
    )
