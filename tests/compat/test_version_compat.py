"""What differs by Airflow minor, checked on whichever Airflow runs the tests (make test runs
tests/compat/suite.txt on the lowest declared minor as well as on 3.3)."""

from __future__ import annotations

import logging

import pytest
from airflow import __version__ as airflow_version
from packaging.version import Version

from airflow_provider_sparkk8s import version_compat
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_V_3_3_PLUS,
    KILL_WHILE_DEFERRED_REACHES_TRIGGER,
    TaskDeferred,
)
from tests.operators.fakes import FakeTaskInstance
from tests.operators.test_operator_flow import cluster, context, make_operator  # noqa: F401


def test_the_flags_follow_the_installed_airflow() -> None:
    installed = Version(Version(airflow_version).base_version)
    assert installed == version_compat.AIRFLOW_VERSION
    assert (installed >= Version("3.1")) == version_compat.AIRFLOW_V_3_1_PLUS
    assert (installed >= Version("3.2")) == version_compat.AIRFLOW_V_3_2_PLUS
    assert (installed >= Version("3.3")) == AIRFLOW_V_3_3_PLUS
    assert KILL_WHILE_DEFERRED_REACHES_TRIGGER == AIRFLOW_V_3_3_PLUS


def test_every_name_resolves() -> None:
    for name in version_compat.__all__:
        assert getattr(version_compat, name) is not None, name


def test_deferring_warns_when_a_kill_cannot_reach_the_trigger(
    cluster: object,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    operator = make_operator(deferrable=True)
    with caplog.at_level(logging.WARNING), pytest.raises(TaskDeferred):
        operator.execute(context(FakeTaskInstance()))
    # 3.0's task logger is a standard-library one; 3.1+'s is structlog, writing to stdout.
    lines = [r.getMessage() for r in caplog.records] + capsys.readouterr().out.splitlines()
    warned = [line for line in lines if "does not pass a kill" in line]
    if KILL_WHILE_DEFERRED_REACHES_TRIGGER:
        assert warned == []
    else:
        assert warned  # once (printed on stdout too where the logger echoes there)
        assert f"Airflow {version_compat.AIRFLOW_VERSION}" in warned[0]
        assert "driver pod team-a/" in warned[0] and "deferrable=False" in warned[0]
