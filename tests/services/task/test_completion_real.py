"""The History Server check against Spark's real History Server (testenv/history_server.py).

The machine holds only fixed releases (the parity cache's pyspark 3.5.9, 4.0.5, 4.1.4, 4.2.1
and 4.3.0), so the real server shows the check reading the version Spark's own REST API
reports and staying quiet; the warning path runs against a loopback server answering a
vulnerable version (test_completion.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.services.task.completion import warn_of_history_server
from airflow_provider_sparkk8s.services.ui.history_server import read_spark_version, url_fetcher
from testenv.history_server import HistoryServer

pytestmark = [pytest.mark.server, pytest.mark.timeout(400)]


def test_a_fixed_real_history_server_reports_its_version_and_gets_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "sparkk8s.test.history")
    with HistoryServer(tmp_path / "events", spark_version="3.5.9") as server:
        assert read_spark_version(url_fetcher(server.url)) == "3.5.9"
        warn_of_history_server(server.url, logging.getLogger("sparkk8s.test.history"))
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
