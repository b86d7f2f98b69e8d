"""The operator's parameters are declared once (operators/spark_k8s_parameters.py): its
signature, with SparkSubmitOperator's kept as SubmitParameters' fields; the attributes, the core's
input and the docs follow."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

REPO = Path(__file__).resolve().parents[2]


def parameters() -> list[str]:
    signature = inspect.signature(SparkK8sSubmitOperator.__init__)
    return [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY]


def test_every_submit_parameter_is_an_operator_parameter_with_the_same_default() -> None:
    assert {f.name for f in fields(SubmitParameters)} <= set(parameters())
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


def test_every_parameter_is_documented() -> None:
    docstring = inspect.getdoc(SparkK8sSubmitOperator) or ""
    guide = (REPO / "docs" / "operator.md").read_text()
    for name in parameters():
        assert f"``{name}``" in docstring or f":param {name}:" in docstring, name
        assert f"`{name}`" in guide, name


def test_dry_run_does_not_shadow_base_operator_dry_run() -> None:
    operator = SparkK8sSubmitOperator(task_id="t", application="a.py", dry_run=True)
    assert operator.render_only is True
    assert inspect.ismethod(operator.dry_run)
