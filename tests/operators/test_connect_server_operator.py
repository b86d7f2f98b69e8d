"""SparkK8sConnectServerOperator's checks (before any request) and its trigger's kwargs."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator
from airflow_provider_sparkk8s.triggers.connect_server import SparkK8sConnectServerTrigger


def test_access_is_not_open_by_default():
    with pytest.raises(SparkConfError, match="token_conn_id"):
        SparkK8sConnectServerOperator(task_id="server")
    SparkK8sConnectServerOperator(task_id="server", allow_unauthenticated=True)
    SparkK8sConnectServerOperator(task_id="server", token_conn_id="connect_token")


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"mode": "destroy"}, "mode"),
        ({"address": "node"}, "address"),
        ({"idle_timeout": 0}, "idle_timeout"),
        ({"idle_timeout": 700, "max_lifetime": 600}, "idle_timeout"),
        ({"mode": "teardown"}, "server_task_id"),
    ],
)
def test_bad_parameters_name_their_key(kwargs, key):
    with pytest.raises(SparkConfError, match=key):
        SparkK8sConnectServerOperator(task_id="t", token_conn_id="c", **kwargs)


def test_the_setup_needs_an_image(monkeypatch):
    operator = SparkK8sConnectServerOperator(task_id="server", allow_unauthenticated=True)
    with pytest.raises(SparkConfError, match="image"):
        operator.execute({})


def test_the_trigger_round_trips_its_kwargs_which_name_no_token():
    trigger = SparkK8sConnectServerTrigger("spark_k8s_default", "ns", "srv-driver", 15002, 600.0)
    classpath, kwargs = trigger.serialize()
    assert (
        classpath
        == "airflow_provider_sparkk8s.triggers.connect_server.SparkK8sConnectServerTrigger"
    )
    assert SparkK8sConnectServerTrigger(**kwargs).serialize() == (classpath, kwargs)
    assert set(kwargs) == {
        "kubernetes_conn_id", "namespace", "driver_pod", "port", "timeout_seconds", "poll_interval",
    }  # fmt: skip
