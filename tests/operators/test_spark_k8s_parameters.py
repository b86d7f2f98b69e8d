"""The operator's parameters are declared once, in two signatures: SparkSubmitOperator's
(operators/spark_submit_arguments.py, SubmitParameters' fields and the ignored ones) and the
operator's own (operators/spark_k8s_parameters.py); the attributes, the core's input, Airflow's
default_args and partial, and the docs follow."""

from __future__ import annotations

import inspect
from pathlib import Path

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.operators.spark_submit_arguments import SparkSubmitArguments

REPO = Path(__file__).resolve().parents[2]


def parameters() -> list[str]:
    """Every keyword the operator's two signatures declare (its own, SparkSubmitOperator's)."""
    declared: list[str] = []
    for cls in SparkK8sSubmitOperator.__mro__:
        if issubclass(cls, SparkSubmitArguments) and "__init__" in vars(cls):
            signature = inspect.signature(vars(cls)["__init__"])
            declared += [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY]
    return declared


def test_the_two_signatures_declare_disjoint_parameters() -> None:
    assert len(parameters()) == len(set(parameters())) == 55, sorted(parameters())


def test_default_args_reach_parameters_of_both_signatures() -> None:
    """Airflow applies `default_args` per declared signature: a parameter of either class
    (SparkSubmitOperator's `driver_memory`, the operator's `startup_timeout`) takes it."""
    from airflow.sdk import DAG

    defaults = {"driver_memory": "3g", "startup_timeout": 42, "namespace": "spark-jobs"}
    with DAG("defaults", schedule=None, default_args=defaults):
        operator = SparkK8sSubmitOperator(task_id="t", application="a.py")
    assert operator.driver_memory == "3g"
    assert operator.namespace == "spark-jobs"
    assert operator.following.startup_timeout == 42


def test_partial_accepts_parameters_of_both_signatures() -> None:
    from airflow.sdk import DAG

    with DAG("mapped", schedule=None):
        mapped = SparkK8sSubmitOperator.partial(
            task_id="t", driver_memory="1g", poll_interval=2.0
        ).expand(application=["a.py", "b.py"])
    assert mapped.partial_kwargs["driver_memory"] == "1g"
    assert mapped.partial_kwargs["poll_interval"] == 2.0


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
