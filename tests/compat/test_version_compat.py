"""What differs by Airflow minor, checked on whichever Airflow runs the tests (make test runs
tests/compat/suite.txt on the lowest declared minor as well as on 3.3)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from airflow import __version__ as airflow_version
from packaging.version import Version

from airflow_provider_sparkk8s import version_compat
from airflow_provider_sparkk8s.errors import (
    ApplicationError,
    ConfigurationError,
    InfrastructureFailure,
)
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_V_3_3_PLUS,
    KILL_WHILE_DEFERRED_REACHES_TRIGGER,
    TaskDeferred,
)
from testenv.fakes import FakeTaskInstance, driver_status
from tests.operators.conftest import cluster  # noqa: F401 - the fixture
from tests.operators.test_operator_flow import context, make_operator, progress


def test_the_flags_follow_the_installed_airflow() -> None:
    installed = Version(Version(airflow_version).base_version)
    assert installed == version_compat.AIRFLOW_VERSION
    assert (installed >= Version("3.1")) == version_compat.AIRFLOW_V_3_1_PLUS
    assert (installed >= Version("3.2")) == version_compat.AIRFLOW_V_3_2_PLUS
    assert (installed >= Version("3.3")) == AIRFLOW_V_3_3_PLUS
    assert KILL_WHILE_DEFERRED_REACHES_TRIGGER == AIRFLOW_V_3_3_PLUS


# Retry policies exist from Airflow 3.3 only: before, these names are None.
RETRY_POLICY_NAMES = {"ExceptionRetryPolicy", "RetryAction", "RetryDecision", "RetryRule"}


def test_every_name_resolves() -> None:
    assert version_compat.RETRY_POLICIES == AIRFLOW_V_3_3_PLUS
    for name in version_compat.__all__:
        value = getattr(version_compat, name)
        if name in RETRY_POLICY_NAMES:
            assert (value is not None) == AIRFLOW_V_3_3_PLUS, name
        else:
            assert value is not None, name


def test_an_application_error_fails_without_retries_on_every_airflow(
    cluster: Any,  # noqa: F811
) -> None:
    """3.3: ApplicationError, which the operator's default retry policy fails at once;
    3.0-3.2, with no retry policies: AirflowFailException, which Airflow never retries.
    Infrastructure stays retriable on both."""
    cluster.on_list = progress(driver_status("finished", exit_code=1))
    operator = make_operator(on_finish_action="delete_pod")
    with pytest.raises(ApplicationError) as error:  # both versions: still its own class
        operator.execute(context(FakeTaskInstance()))
    if AIRFLOW_V_3_3_PLUS:
        from airflow_provider_sparkk8s.operators.retry_policy import SparkK8sRetryPolicy

        assert not isinstance(error.value, version_compat.AirflowFailException)
        assert isinstance(operator.retry_policy, SparkK8sRetryPolicy)
        decision = operator.retry_policy.evaluate(error.value, 1, 3)
        assert decision.action is version_compat.RetryAction.FAIL
    else:
        assert isinstance(error.value, version_compat.AirflowFailException)
        assert str(error.value).endswith("(application error: not retried)")
        assert error.value.exit_code == 1
        assert getattr(operator, "retry_policy", None) is None
        with pytest.raises(ImportError, match=r"needs Airflow 3\.3"):
            import airflow_provider_sparkk8s.operators.retry_policy  # noqa: F401
    # A driver someone deleted is infrastructure: retried by Airflow on every version.
    cluster.pods.clear()
    cluster.on_list = lambda fake: fake.pods.clear()
    with pytest.raises(InfrastructureFailure):
        make_operator(on_finish_action="delete_pod").execute(context(FakeTaskInstance()))


def test_a_missing_image_fails_without_retries_on_every_airflow(
    cluster: Any,  # noqa: F811
) -> None:
    """The registry said the driver's image does not exist: 3.3's default policy fails the
    ConfigurationError at once; 3.0-3.2 raise it as AirflowFailException too."""
    cluster.on_list = progress(driver_status("image_missing"))
    operator = make_operator()
    with pytest.raises(ConfigurationError) as error:
        operator.execute(context(FakeTaskInstance()))
    if AIRFLOW_V_3_3_PLUS:
        policy = operator.retry_policy
        assert policy is not None
        assert policy.evaluate(error.value, 1, 3).action is version_compat.RetryAction.FAIL
    else:
        assert isinstance(error.value, version_compat.AirflowFailException)
        assert str(error.value).endswith("(configuration error: not retried)")
        assert error.value.reason == "ImageNotFound"


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


def test_stats_finds_what_it_reads_of_airflows_metrics_backend() -> None:
    """stats() reads a private attribute of the SDK's stats module (3.2+) to tell whether
    this process initialised it: if a release renames it, this fails, not the metrics."""
    import sys

    try:
        from airflow.sdk.observability import stats as sdk_stats
    except ImportError:  # 3.0, 3.1: airflow.stats.Stats, nothing private is read
        assert hasattr(version_compat.stats(), "incr")
        return
    module = sys.modules[sdk_stats.incr.__module__]
    assert hasattr(module, "_factory"), module
    assert callable(version_compat.stats().incr)
