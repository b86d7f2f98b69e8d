from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.services.following.store import SnapshotStore
from airflow_provider_sparkk8s.version_compat import AIRFLOW_V_3_1_PLUS
from testenv.trigger_fleet.running_stores import running_stores


class _CurrentStdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stdout is at emit time (pytest swaps it per test)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stdout
        super().emit(record)


@pytest.fixture(autouse=True)
def trigger_log_on_stdout(capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    """Airflow 3.1+ gives a trigger a structlog logger that writes the task log to stdout,
    where the log tests read it. Airflow 3.0's is a standard-library logger: send its
    records to stdout in the same shape for the duration of a test."""
    if AIRFLOW_V_3_1_PLUS:
        yield
        return
    handler = _CurrentStdout()
    handler.setFormatter(logging.Formatter("%(asctime)s] %(message)s  [%(name)s]"))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


@pytest.fixture
def stores() -> Iterator[list[SnapshotStore]]:
    """The snapshot stores running now (started and not yet stopped)."""
    with running_stores() as running:
        yield running
