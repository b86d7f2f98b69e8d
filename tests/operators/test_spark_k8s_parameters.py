"""The operator's parameters are declared once, in two signatures: SparkSubmitOperator's
(operators/spark_submit_arguments.py, SubmitParameters' fields and the ignored ones) and the
operator's own (operators/spark_k8s_parameters.py); the attributes, the core's input, Airflow's
default_args and partial, and the docs follow."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.operators.spark_submit_arguments import SparkSubmitArguments
from airflow_provider_sparkk8s.version_compat import START_FROM_TRIGGER_RENDERS

REPO = Path(__file__).resolve().parents[2]


# Airflow before 3.3 refuses the switch first (test_airflow_before_3_3_is_refused_naming_its_version).
NEEDS_WORKER_FREE = pytest.mark.skipif(
    not START_FROM_TRIGGER_RENDERS, reason="worker-free tasks need Airflow 3.3"
)


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


def worker_free(**overrides: object) -> SparkK8sSubmitOperator:
    params: dict[str, object] = {
        "task_id": "t",
        "application": "s3a://jobs/etl.py",
        "image": "apache/spark:4.0.1",
        "start_from_trigger": True,
        **overrides,
    }
    return SparkK8sSubmitOperator(**params)  # type: ignore[arg-type]


def test_start_from_trigger_is_off_by_default() -> None:
    operator = SparkK8sSubmitOperator(task_id="t", application="a.py")
    assert operator.start_from_trigger is False
    assert operator.start_trigger_args is None


@NEEDS_WORKER_FREE
def test_start_from_trigger_defers_to_the_submit_trigger_with_plain_kwargs() -> None:
    from datetime import timedelta

    operator = worker_free(execution_timeout=timedelta(minutes=30), driver_memory="2g")
    args = operator.start_trigger_args
    assert operator.start_from_trigger is True and args is not None
    assert args.trigger_cls == (
        "airflow_provider_sparkk8s.triggers.spark_k8s_submit.SparkK8sSubmitTrigger"
    )
    assert (args.next_method, args.timeout) == ("execute_worker_free_end", timedelta(minutes=30))
    kwargs = args.trigger_kwargs or {}
    assert kwargs["driver_memory"] == "2g" and kwargs["name"] == "t"
    assert kwargs["following"]["reattach_on_restart"] is True
    # The provider's retry policy rides along as its factor only.
    assert kwargs["memory_factor"] is None


@NEEDS_WORKER_FREE
def test_start_from_trigger_from_default_args() -> None:
    from airflow.sdk import DAG

    with DAG("defaults", schedule=None, default_args={"start_from_trigger": True}):
        operator = SparkK8sSubmitOperator(task_id="t", application="s3a://b/a.py")
    assert operator.start_from_trigger is True


@NEEDS_WORKER_FREE
@pytest.mark.parametrize(
    ("overrides", "key", "why"),
    [
        ({"application": "jobs/etl.py"}, "application", "worker's disk"),
        ({"driver_pod_template": "pod.yaml"}, "driver_pod_template", "read from disk"),
        ({"conf": {"spark.x": len}}, "conf['spark.x']", "callable"),
        ({"dry_run": True}, "dry_run", "worker"),
        ({"openlineage_inject_parent_job_info": True}, "openlineage_inject_parent_job_info", "context"),
        ({"reattach_on_restart": False}, "reattach_on_restart", "second one"),
    ],
)  # fmt: skip
def test_what_needs_a_worker_is_refused_when_the_dag_is_parsed(
    overrides: dict[str, object], key: str, why: str
) -> None:
    with pytest.raises(SparkConfError) as caught:
        worker_free(**overrides)
    assert caught.value.key == key
    assert why in str(caught.value) and "start_from_trigger=True" in str(caught.value)


def test_airflow_before_3_3_is_refused_naming_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_sparkk8s.operators import spark_k8s_parameters

    monkeypatch.setattr(spark_k8s_parameters, "START_FROM_TRIGGER_RENDERS", False)
    with pytest.raises(SparkConfError) as caught:
        worker_free()
    assert caught.value.key == "start_from_trigger"
    assert f"Airflow {spark_k8s_parameters.AIRFLOW_VERSION}" in str(caught.value)


# ------------------------------------------------------------------ the DAG's Jinja names

DAG_HEAD = """
import jinja2
from airflow.sdk import DAG
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

def spark(task_id, **kwargs):
    return SparkK8sSubmitOperator(
        task_id=task_id, application="s3a://jobs/etl.py", image="apache/spark:4.0.1", **kwargs
    )
"""
MACROS = "user_defined_macros={'bucket': lambda: 's3a://team'}, user_defined_filters={'shout': str.upper}"


def parsed(tmp_path: Path, body: str, dag_args: str = MACROS) -> tuple[list[str], dict[str, str]]:
    """The DAG file parsed as the dag processor parses it: its tasks, its import errors."""
    from airflow.dag_processing.dagbag import DagBag

    head = DAG_HEAD + f"dag = DAG('macros', schedule=None, {dag_args})\n"
    (tmp_path / "macros.py").write_text(head + body)
    bag = DagBag(dag_folder=str(tmp_path))
    dag = bag.dags.get("macros")
    return (sorted(dag.task_ids) if dag else []), dict(bag.import_errors)


@NEEDS_WORKER_FREE
@pytest.mark.parametrize(
    ("body", "key", "which"),
    [
        (  # under `with DAG`
            (
                "with dag:\n"
                "    spark('free', conf={'spark.out': '{{ bucket() }}/out'}, start_from_trigger=True)\n"
            ),
            "conf['spark.out']='{{ bucket() }}/out'", "user_defined_macros (bucket)",
        ),
        (  # dag=
            "spark('free', dag=dag, application_args=['{{ ds | shout }}'], start_from_trigger=True)\n",
            "application_args[0]='{{ ds | shout }}'", "user_defined_filters (shout)",
        ),
        (  # added to the DAG after its __init__
            "dag.add_task(spark('free', conf={'spark.x': '{{ bucket() }}'}, start_from_trigger=True))\n",
            "conf['spark.x']='{{ bucket() }}'", "user_defined_macros (bucket)",
        ),
    ],
)  # fmt: skip
def test_a_worker_free_task_using_the_dags_macros_or_filters_fails_the_dag_file(
    tmp_path: Path, body: str, key: str, which: str
) -> None:
    tasks, errors = parsed(tmp_path, body)
    assert tasks == []
    (error,) = errors.values()
    assert f"SparkConfError: {key} is invalid" in error
    assert which in error and "start_from_trigger=False" in error


@NEEDS_WORKER_FREE
def test_the_dags_macros_used_by_worker_tasks_only_are_accepted(tmp_path: Path) -> None:
    body = (
        "with dag:\n"
        "    spark('in_worker', conf={'spark.out': '{{ bucket() }}/{{ ds | shout }}'})\n"
        "    spark('free', conf={'spark.out': '{{ params.bucket }}/{{ ds }}'},\n"
        "          params={'bucket': 's3a://team'}, start_from_trigger=True)\n"
    )
    tasks, errors = parsed(tmp_path, body)
    assert errors == {}
    assert tasks == ["free", "in_worker"]


# ------------------------------------------------------------------ the DAG's other Jinja settings


@NEEDS_WORKER_FREE
@pytest.mark.parametrize(
    ("dag_args", "app_name", "setting"),
    [
        (
            "jinja_environment_kwargs={'variable_start_string': '[[', 'variable_end_string': ']]'}",
            "etl-[[ ds ]]",
            "jinja_environment_kwargs (variable_end_string, variable_start_string)",
        ),
        (
            "jinja_environment_kwargs={'keep_trailing_newline': True}",
            "etl-{{ ds }}",
            "jinja_environment_kwargs (keep_trailing_newline)",
        ),
        (
            "template_undefined=jinja2.Undefined",
            "etl-{{ ds }}",
            "template_undefined (jinja2.runtime.Undefined)",
        ),
    ],
)
def test_a_worker_free_template_under_the_dags_jinja_settings_fails_the_dag_file(
    tmp_path: Path, dag_args: str, app_name: str, setting: str
) -> None:
    """Neither setting reaches the serialized DAG; a worker task of the same DAG may rely
    on it, and a worker-free task without templates is accepted."""
    in_worker = (
        "with dag:\n"
        f"    spark('in_worker', conf={{'spark.app.name': {app_name!r}}})\n"
        "    spark('plain', conf={'spark.app.name': 'etl'}, start_from_trigger=True)\n"
    )
    tasks, errors = parsed(tmp_path, in_worker, dag_args)
    assert (tasks, errors) == (["in_worker", "plain"], {})
    free = f"spark('free', dag=dag, conf={{'spark.app.name': {app_name!r}}}, start_from_trigger=True)\n"
    tasks, errors = parsed(tmp_path, free, dag_args)
    assert tasks == []
    (error,) = errors.values()
    assert f"SparkConfError: conf['spark.app.name']={app_name!r} is invalid" in error
    assert setting in error and "not reach the triggerer" in error


@NEEDS_WORKER_FREE
@pytest.mark.parametrize(
    ("free", "key", "why"),
    [
        (
            "conf={'spark.app.name': \"{% include 'app_name.txt' %}\"}",
            "conf['spark.app.name']=\"{% include 'app_name.txt' %}\"",
            "{% include %}",
        ),
        (
            "application_args=['--settings', 'settings.json']",
            "application_args[1]='settings.json'",
            "ending in .yaml, .yml, .json as a template file",
        ),
    ],
)
def test_a_worker_free_task_reading_a_template_file_fails_the_dag_file(
    tmp_path: Path, free: str, key: str, why: str
) -> None:
    """The files sit in the DAG's template_searchpath and its folder, where a worker reads
    them; the triggerer has neither."""
    searchpath = tmp_path / "templates"
    searchpath.mkdir()
    (searchpath / "app_name.txt").write_text("etl-{{ ds }}")
    (tmp_path / "settings.json").write_text('{"day": "{{ ds }}"}')
    dag_args = f"template_searchpath=[{str(searchpath)!r}]"
    tasks, errors = parsed(tmp_path, f"spark('in_worker', dag=dag, {free})\n", dag_args)
    assert (tasks, errors) == (["in_worker"], {})
    body = f"spark('free', dag=dag, start_from_trigger=True, {free})\n"
    tasks, errors = parsed(tmp_path, body, dag_args)
    assert tasks == []
    (error,) = errors.values()
    assert f"SparkConfError: {key} is invalid" in error
    assert why in error and "template_searchpath" in error and "start_from_trigger=False" in error
