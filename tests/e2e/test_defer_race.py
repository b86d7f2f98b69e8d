"""Airflow's stale defer-exit race (apache/airflow#72716): AirflowStack.wait_run tells it
apart from a run that failed by what it ran, and the e2e tests are rerun on it alone, at
most twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testenv.airflow_stack import AirflowDeferRace, AirflowStack

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "manual__2026-12-04T16:29:30.728289+00:00"
# The scheduler's line from a CI-like run on 2026-12-04 (load 13), as Airflow 3.3.2 wrote it.
RACE_LINE = (
    "2026-12-04T16:29:39.626665Z [error    ] Executor LocalExecutor(parallelism=4) reported that "
    f"the task instance <TaskInstance: probe_deferral.defer_once {RUN_ID} [running] "
    "ti_id=01a241e3-b10e-79c6-9bb3-3c9fd314fc40> finished with state success, but the task "
    "instance's state attribute is running. Learn more: https://airflow.apache.org/docs/"
)


def stack_with_scheduler_log(home: Path, *lines: str) -> AirflowStack:
    log = home / "components" / "scheduler.log"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(("2026-12-04T16:29:31Z [info     ] scheduler loop", *lines)) + "\n")
    return AirflowStack(home=home, dags_folder=home, port=0, env={}, password="")


def test_the_race_line_of_the_run_raises_it_and_nothing_else_does(tmp_path: Path) -> None:
    stack = stack_with_scheduler_log(tmp_path, RACE_LINE)
    with pytest.raises(AirflowDeferRace, match="probe_deferral"):
        stack.raise_on_defer_race("probe_deferral", RUN_ID)
    stack.raise_on_defer_race("probe_deferral", RUN_ID.replace("16:29", "16:31"))
    stack.raise_on_defer_race("e2e_spark_pi", RUN_ID)


def test_a_race_is_rerun_at_most_twice_and_another_failure_never(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        "from tests.conftest import RERUN_ON_DEFER_RACE\n"
        "from testenv.airflow_stack import AirflowDeferRace\n"
        "calls = []\n"
        "@RERUN_ON_DEFER_RACE\n"
        "def test_race_then_pass():\n"
        "    calls.append(1)\n"
        "    if len(calls) == 1:\n"
        "        raise AirflowDeferRace('run r of d: the scheduler line')\n"
        "@RERUN_ON_DEFER_RACE\n"
        "def test_another_failure():\n"
        "    raise AssertionError('the application failed')\n"
        "@RERUN_ON_DEFER_RACE\n"
        "def test_the_race_twice():\n"
        "    raise AirflowDeferRace('run r of d: again')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "test_sample.py"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    summary = done.stdout.strip().splitlines()[-1]
    assert "2 failed, 1 passed, 3 rerun" in summary, done.stdout + done.stderr
    assert "PASSED test_sample.py::test_race_then_pass" in done.stdout
    assert "FAILED test_sample.py::test_another_failure" in done.stdout
