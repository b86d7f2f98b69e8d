"""SparkSubmitOperator's parameters (operators/spark_submit_arguments.py): each one
spark-submit reads is a keyword under its name, kept as an attribute Airflow renders, and
reaches the core unchanged; the ones we cannot honour are refused or recorded as ignored."""

from __future__ import annotations

import inspect
from dataclasses import fields
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.operators.spark_submit_arguments import SparkSubmitArguments


def declared() -> set[str]:
    signature = inspect.signature(SparkSubmitArguments.__init__)
    return {p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY}


def test_every_submit_parameter_is_an_operator_parameter_with_the_same_default() -> None:
    assert {f.name for f in fields(SubmitParameters)} <= declared()
    assert SparkK8sSubmitOperator(task_id="t")._submit_parameters() == SubmitParameters(name="t")


def test_every_submit_parameter_reaches_the_core_under_its_own_name() -> None:
    typed: dict[str, Any] = {
        "conf": {"spark.k": "v"},
        "env_vars": {"K": "v"},
        "application_args": ["a"],
        "verbose": True,
    }
    given = {
        f.name: typed.get(f.name, f"value-{n}") for n, f in enumerate(fields(SubmitParameters))
    }
    operator = SparkK8sSubmitOperator(task_id="t", **given)
    assert operator._submit_parameters() == SubmitParameters(**given)
    assert all(getattr(operator, name) == value for name, value in given.items())


def test_use_krb5ccache_is_refused_naming_the_key() -> None:
    with pytest.raises(ValueError, match="use_krb5ccache"):
        SparkK8sSubmitOperator(task_id="t", application="a.py", use_krb5ccache=True)


def test_spark_binary_and_yarn_queue_are_kept_as_ignored() -> None:
    operator = SparkK8sSubmitOperator(
        task_id="t", application="a.py", spark_binary="spark3-submit", yarn_queue="q"
    )
    assert operator.ignored.spark_binary == "spark3-submit"
    assert operator.ignored.yarn_queue == "q"
