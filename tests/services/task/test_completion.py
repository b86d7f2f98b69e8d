"""The History Server's known vulnerabilities in the task log (services/task/completion.py's
`warn_of_history_server`), over real HTTP: a test server on loopback answering
`/api/v1/version` with the version it is given (the warning path: the machine's real History
Servers are all fixed releases, see test_completion_real.py), a port nobody
listens on, and the operator's whole run through the fake cluster (one warning per task)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from airflow_provider_sparkk8s.services.task.completion import warn_of_history_server
from testenv.fakes import FakeTaskInstance, driver_status
from testenv.harness.loopback import LoopbackServer
from tests.operators.conftest import cluster  # noqa: F401 - the operator's fake cluster
from tests.operators.test_operator_flow import context, make_operator, progress

LOGGER = "sparkk8s.test.history"


class VersionServer(LoopbackServer):
    """Answers GET /api/v1/version with `{"spark": <version>}`; counts what it is asked."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.asked: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.asked.append(self.path)
                if self.path != "/api/v1/version":
                    self.send_error(404)
                    return
                body = json.dumps({"spark": server.version}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler)


@pytest.fixture
def vulnerable() -> Iterator[VersionServer]:
    with VersionServer("3.5.6") as server:
        yield server


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_vulnerable_server_is_named_with_its_version_issues_and_fixes(vulnerable, caplog):
    caplog.set_level(logging.INFO, LOGGER)
    warn_of_history_server(vulnerable.url + "/", logging.getLogger(LOGGER))
    [line] = _warnings(caplog)
    assert f"The History Server at {vulnerable.url}/ runs Spark 3.5.6" in line
    assert "CVE-2025-54920" in line and "fixed in 3.5.7 and 4.0.1" in line
    assert "CVE-2026-32773" in line and "fixed in 3.5.8" in line
    assert vulnerable.asked == ["/api/v1/version"]


@pytest.mark.parametrize(("version", "named"), [("4.0.0", ["CVE-2025-54920"]),
                                                 ("3.5.7", ["CVE-2026-32773"]),
                                                 ("3.5.8", []), ("4.0.1", []),
                                                 ("not-a-version", [])])  # fmt: skip
def test_each_version_warns_of_its_own_issues_only(version, named, caplog):
    caplog.set_level(logging.INFO, LOGGER)
    with VersionServer(version) as server:
        warn_of_history_server(server.url, logging.getLogger(LOGGER))
    lines = _warnings(caplog)
    assert len(lines) == (1 if named else 0)
    for cve in ["CVE-2025-54920", "CVE-2026-32773"]:
        assert (cve in "".join(lines)) == (cve in named)


def test_an_unreachable_server_or_none_configured_warns_of_nothing(caplog):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    caplog.set_level(logging.INFO, LOGGER)
    warn_of_history_server(f"http://127.0.0.1:{port}", logging.getLogger(LOGGER))
    warn_of_history_server(None, logging.getLogger(LOGGER))
    assert _warnings(caplog) == []


def test_the_operator_warns_once_per_task_after_its_driver_ends(cluster, vulnerable, capfd):  # noqa: F811
    cluster.hook.extra = {"history_server_url": vulnerable.url}  # type: ignore[attr-defined]
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    capfd.readouterr()
    result = make_operator().execute(context(FakeTaskInstance()))
    out = "".join(capfd.readouterr())
    assert result["state"] == "succeeded"
    assert out.count(f"The History Server at {vulnerable.url} runs Spark 3.5.6") == 1
    assert vulnerable.asked == ["/api/v1/version"]  # no event log: no run summary read
