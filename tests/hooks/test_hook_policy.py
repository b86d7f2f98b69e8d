"""The platform policy from an Airflow connection's extras, through the hook (Airflow's own
connection lookup, from an AIRFLOW_CONN_ variable), else from `[sparkk8s] policy`."""

from __future__ import annotations

import json

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.provider_info import SPARK_K8S_CONNECTION

DOCUMENT = {"denied_keys": ["spark.kubernetes.authenticate.*"], "max_executors": 8}


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: dict) -> None:
    connection = {"conn_type": "spark_k8s", "host": "https://kube:6443", "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(connection))


@pytest.mark.parametrize(
    "stored",
    [DOCUMENT, json.dumps(DOCUMENT)],  # an object in JSON extras; text from the form's field
    ids=["object", "form-text"],
)
def test_the_connection_extra_gives_the_policy(
    monkeypatch: pytest.MonkeyPatch, stored: object
) -> None:
    monkeypatch.setenv("AIRFLOW__SPARKK8S__POLICY", '{"max_executors": 1}')
    set_connection(monkeypatch, "governed", {"policy": stored})
    policy = SparkK8sHook("governed").get_policy()
    assert policy is not None
    assert policy.source == "connection 'governed' (extra policy)"
    assert policy.max_executors == 8  # the connection's wins over the config's
    assert policy.denied_keys == ("spark.kubernetes.authenticate.*",)


def test_the_older_forms_prefixed_extra_is_read_too(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, "old_ui", {"extra__spark_k8s__policy": json.dumps(DOCUMENT)})
    policy = SparkK8sHook("old_ui").get_policy()
    assert policy is not None and policy.max_executors == 8


def test_without_the_extra_the_config_gives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, "plain", {})
    assert SparkK8sHook("plain").get_policy() is None
    monkeypatch.setenv("AIRFLOW__SPARKK8S__POLICY", "max_executors: 2\n")
    policy = SparkK8sHook("plain").get_policy()
    assert policy is not None and policy.source == "[sparkk8s] policy"
    assert policy.max_executors == 2


def test_a_typo_in_the_extra_names_the_field_and_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_connection(monkeypatch, "typo", {"policy": {"max_executor": 8}})
    with pytest.raises(SparkConfError, match=r"policy\.max_executor=8 .*connection 'typo'"):
        SparkK8sHook("typo").get_policy()


def test_the_form_declares_the_policy_field_once() -> None:
    field = SPARK_K8S_CONNECTION["conn-fields"]["policy"]
    assert field["schema"]["type"] == ["string", "null"]
    assert "policy" in SparkK8sHook.get_connection_form_widgets()
