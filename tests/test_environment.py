"""The process environment reads through and is never shown, not even by rich's tracebacks."""

from __future__ import annotations

import io
import os

import pytest
from rich.console import Console
from rich.pretty import pretty_repr
from rich.traceback import Traceback

from airflow_provider_sparkk8s.environment import HiddenEnvironment, hidden
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.submit import submission

SECRET = "t0ken-0f-a-connection"


def test_it_reads_as_a_snapshot_and_shows_only_its_size() -> None:
    source = {"SPARK_USER": "alice", "AIRFLOW_CONN_X": SECRET}
    environ = hidden(source)
    source["LATER"] = "1"
    assert dict(environ) == {"SPARK_USER": "alice", "AIRFLOW_CONN_X": SECRET}
    assert environ.get("SPARK_USER") == "alice" and "LATER" not in environ
    assert repr(environ) == "HiddenEnvironment(2 variables, not shown)"
    assert SECRET not in pretty_repr(environ) and SECRET not in str(environ)
    assert hidden(environ) is environ
    assert len(HiddenEnvironment(os.environ)) == len(os.environ)


def test_a_failed_submissions_traceback_with_its_locals_shows_no_variable() -> None:
    """What Airflow 3.0's `dags test` prints for a bad input: every frame's locals, by rich."""
    request = submission.SubmissionRequest(
        ["--master", "k8s://https://h:6443", "--executor-memory", "lots", "local:///app.jar"],
        {"AIRFLOW_CONN_X": SECRET, "SPARK_USER": "alice"},
        "/",
    )
    with pytest.raises(SparkConfError) as failure:
        submission.parse(request)  # spark-submit's checks of its arguments
    shown = io.StringIO()
    Console(file=shown, width=200).print(
        Traceback.from_exception(
            failure.type, failure.value, failure.tb, show_locals=True, max_frames=100
        )
    )
    assert "executor-memory" in shown.getvalue()  # the traceback and its locals are there
    assert SECRET not in shown.getvalue()
