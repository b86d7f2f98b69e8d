"""One real Airflow for every end-to-end and browser test in the session.

Its DAGs folder holds the repository's `dags/` and the provider-free probe DAG, each
linked in, so a failure of the probe points at the stack and a failure of the
example DAGs points at the provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.airflow_stack import E2E_TIMINGS, AirflowStack, running_stack

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowStack]:
    root = tmp_path_factory.mktemp("airflow")
    dags = root / "dags"
    dags.mkdir()
    (dags / "examples").symlink_to(REPO / "dags", target_is_directory=True)
    (dags / "probe").symlink_to(REPO / "tests/e2e/probe_dags", target_is_directory=True)
    with running_stack(root / "home", dags) as stack:
        E2E_TIMINGS.update({f"stack {key}": value for key, value in stack.timings.items()})
        yield stack


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if E2E_TIMINGS:
        terminalreporter.section("Airflow end-to-end timings")
        for name, seconds in E2E_TIMINGS.items():
            terminalreporter.write_line(f"{name:<45} {seconds:7.1f}")
