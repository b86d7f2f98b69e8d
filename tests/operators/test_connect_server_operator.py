"""SparkK8sConnectServerOperator's checks (before any request) and its trigger's kwargs."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import ConnectServerUnavailable, SparkConfError
from airflow_provider_sparkk8s.operators import connect_server as operator_module
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


def test_a_server_that_ended_before_ready_is_deleted_and_fails_the_task(monkeypatch):
    deleted = []
    monkeypatch.setattr(
        operator_module.connect_server, "teardown", lambda pods, ns, pod: deleted.append((ns, pod))
    )
    monkeypatch.setattr(operator_module.SparkK8sHook, "get_client", lambda self: object())
    operator = SparkK8sConnectServerOperator(task_id="server", token_conn_id="c")
    server = {"application_id": "spark-1", "namespace": "ns", "driver_pod": "srv-driver",
              "service": "srv-driver-svc", "port": 15002}  # fmt: skip
    event = {"status": "ended", "reason": "the driver pod srv-driver ended: Failed, Error"}
    with pytest.raises(ConnectServerUnavailable, match="ns:srv-driver: the driver pod"):
        operator.execute_complete({}, event, server)
    assert deleted == [("ns", "srv-driver")]


def test_a_ready_event_publishes_the_url_and_no_token_and_logs_the_executors(monkeypatch):
    logged = []
    monkeypatch.setattr(operator_module.SparkK8sHook, "get_client", lambda self: None)
    monkeypatch.setattr(
        operator_module.connect_status, "executors_of",
        lambda pods, namespace, app_id: logged.append((namespace, app_id)) or "1 executor: e",
    )  # fmt: skip
    operator = SparkK8sConnectServerOperator(task_id="server", token_conn_id="c")
    server = {"application_id": "spark-1", "namespace": "ns", "driver_pod": "srv-driver",
              "service": "srv-driver-svc", "port": 15002}  # fmt: skip
    published = operator.execute_complete({}, {"status": "ready", "pod_ip": "10.1.2.3"}, server)
    assert published == {**server, "url": "sc://srv-driver-svc.ns.svc:15002", "token_conn_id": "c"}
    assert logged == [("ns", "spark-1")]
