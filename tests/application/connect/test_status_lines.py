"""The Connect server's status lines from plain data: the Connect tab's HTML as Spark 4
renders it (its shape; the real page is read in tests/runtime/test_connect_server_runtime.py)
and executor pods."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.connect.status_lines import (
    ConnectPage,
    Session,
    executors_line,
    parse_connect_page,
    sessions_line,
    ui_port_of,
)


def _session_row(user: str, session_id: str, finish: str, requests: int) -> str:
    link = f"/connect/session/?id={session_id}&amp;userId=dXNlcg"
    return (
        f'<tr><td> {user} </td><td> <a href="{link}"> {session_id} </a> </td>'
        f"<td> 2026/12/02 05:00:00 </td><td> {finish} </td><td> 3 seconds </td>"
        f"<td> {requests} </td></tr>"
    )


def _request_row(session_id: str) -> str:
    cells = [
        "airflow",
        "[0]",
        "[0]",
        f'<a href="/connect/session/?id={session_id}">{session_id}</a>',
    ]
    cells += ["x"] * 11
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


PAGE = f"""<html><body><ul><li><strong>Started at: </strong> 2026/12/02</li></ul><br/>
<h4>
  2
  session(s) are online,
  running
  1
  Request(s)
</h4>
<span id="sessionstat"><h4><a>Session Statistics (3)</a></h4></span>
<div><table id="sessionstat-table"><thead><tr><th>User</th><th>Session ID</th></tr></thead><tbody>
{_session_row("airflow", "a1", "", 4)}
{_session_row("airflow", "b2", "2026/12/02 05:00:09", 2)}
{_session_row("root", "c3", "", 0)}
</tbody></table></div>
<span id="sqlstat"><h4><a>Request Statistics (7)</a></h4></span>
<table><tbody>{_request_row("a1")}</tbody></table></body></html>"""


def test_the_connect_tab_gives_counts_and_sessions_live_or_closed():
    page = parse_connect_page(PAGE)
    assert page is not None
    assert (page.online, page.running_requests) == (2, 1)
    assert (page.sessions_served, page.requests_served) == (3, 7)
    # The request table's rows (15 cells) are not sessions.
    assert page.sessions == (
        Session("airflow", "a1", True, 4),
        Session("airflow", "b2", False, 2),
        Session("root", "c3", True, 0),
    )
    line = sessions_line(page)
    assert line.startswith("2 session(s) online: a1 (airflow), c3 (root); 1 request(s) running")
    assert line.endswith("3 session(s) and 7 request(s) since start")


def test_no_sessions_yet_and_a_page_that_is_not_the_tab():
    empty = parse_connect_page(
        "<h4>0 session(s) are online, running 0 Request(s)</h4>"
        "<a>Session Statistics (0)</a>No statistics have been generated yet."
    )
    assert empty == ConnectPage(0, 0, 0, 0, ())
    assert sessions_line(empty).startswith("0 session(s) online; 0 request(s) running")
    assert parse_connect_page("<html>Jobs</html>") is None
    assert sessions_line(None, "the driver UI at h:4040 did not answer: refused") == (
        "sessions unknown (the driver UI at h:4040 did not answer: refused)"
    )


def _pod(name: str, role: str, phase: str | None, deleting: bool = False) -> dict:
    metadata = {"name": name, "labels": {"spark-role": role}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-02T05:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase} if phase else {}}


def test_executors_are_named_with_their_phase_and_the_driver_is_not_one():
    pods = [
        _pod("srv-exec-2", "executor", None, deleting=True),
        _pod("srv-driver", "driver", "Running"),
        _pod("srv-exec-1", "executor", "Running"),
    ]
    assert executors_line(pods) == (
        "2 executors: srv-exec-1 (Running), srv-exec-2 (Pending, being deleted)"
    )
    assert executors_line([_pod("srv-exec-1", "executor", "Running")]).startswith("1 executor:")
    assert executors_line([_pod("srv-driver", "driver", "Running")]) == "no executors"


def test_the_ui_port_is_the_one_the_driver_container_declares():
    pod = {"spec": {"containers": [
        {"name": "connect-idle-watch", "ports": [{"name": "spark-ui", "containerPort": 1}]},
        {"name": "spark-kubernetes-driver",
         "ports": [{"name": "driver-rpc-port", "containerPort": 7078},
                   {"name": "spark-ui", "containerPort": 4041}]},
    ]}}  # fmt: skip
    assert ui_port_of(pod) == 4041
    assert ui_port_of(None) == 4040
