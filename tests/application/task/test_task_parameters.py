"""The operator's own parameters in typed groups: checked once, as given."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_sparkk8s.application.task.task_parameters import (
    Following,
    Ignored,
    refuse_krb5ccache,
)
from airflow_provider_sparkk8s.errors import SparkConfError


def following(**given: object) -> Following:
    parameters: dict = {
        "poll_interval": 5.0, "status_poll_interval": None, "startup_timeout": 600.0,
        "run_timeout": None, "get_logs": True, "log_tail_lines": 100,
        "reattach_on_restart": True, "on_finish_action": "delete_succeeded_pod",
    }  # fmt: skip
    parameters.update(given)
    return Following.of(*parameters.values())


def test_the_defaults_are_the_operators():
    assert following() == Following()


def test_status_poll_interval_means_poll_interval_and_a_timedelta_is_seconds():
    chosen = following(status_poll_interval=2, startup_timeout=timedelta(minutes=1))
    assert chosen.poll_interval == 2.0 and chosen.startup_timeout == 60.0


def test_an_unknown_on_finish_action_is_refused_naming_the_choices():
    with pytest.raises(SparkConfError, match="delete_pod or delete_succeeded_pod or keep_pod"):
        following(on_finish_action="delete")


def test_a_timeout_execution_timeout_always_ends_first_is_named():
    chosen = following(startup_timeout=900, run_timeout=60)
    [warning] = chosen.shadowed_by(timedelta(seconds=600))
    assert warning.startswith("startup_timeout=900s never fires: execution_timeout=600s")
    assert chosen.shadowed_by(None) == []


def test_spark_submit_operators_ignored_parameters_are_named_once_with_the_connection():
    assert Ignored().warning("spark_k8s_default") is None
    warning = Ignored(conn_id="spark_default", yarn_queue="etl").warning("spark_k8s_default")
    assert warning is not None
    assert warning.startswith("Ignoring conn_id='spark_default', yarn_queue='etl':")
    assert "kubernetes_conn_id='spark_k8s_default'" in warning


def test_use_krb5ccache_is_refused():
    refuse_krb5ccache(False)
    with pytest.raises(SparkConfError, match="give keytab and principal instead"):
        refuse_krb5ccache(True)
