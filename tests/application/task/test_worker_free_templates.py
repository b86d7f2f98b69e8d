"""What the worker-free mode refuses in a task's templates, on plain data: what a worker
would take from the DAG and the triggerer never sees. Each refusal names the parameter, its
value and why."""

from __future__ import annotations

from typing import Any

import jinja2
import pytest

from airflow_provider_sparkk8s.application.task.worker_free import check_worker_free
from airflow_provider_sparkk8s.application.task.worker_free_templates import (
    STRICT_UNDEFINED,
    DagJinja,
    check_dag_templates,
    qualified_name,
    refuse_dag_jinja,
    refuse_jinja_kwargs,
    refuse_template_files,
    refuse_template_undefined,
)
from airflow_provider_sparkk8s.errors import SparkConfError

# ------------------------------------------------------------------ the DAG's Jinja names

MACROS = ("team_bucket", "owner")
FILTERS = ("shout",)


def dag_jinja_refusal(templated: dict[str, Any]) -> SparkConfError:
    with pytest.raises(SparkConfError) as caught:
        refuse_dag_jinja(templated, MACROS, FILTERS)
    return caught.value


@pytest.mark.parametrize(
    ("templated", "key", "used"),
    [
        ({"application": "{{ team_bucket() }}/etl.py"}, "application", "(team_bucket)"),
        ({"namespace": "{{ owner }}"}, "namespace", "(owner)"),  # renders "" in the triggerer
        (
            {"conf": {"spark.a": "x", "spark.b": "{{ owner.upper() }}"}},
            "conf['spark.b']",
            "(owner)",
        ),
        ({"application_args": ["--day", "{{ ds }}-{{ owner }}"]}, "application_args[1]", "(owner)"),
        (
            {"env_vars": {"E": {"deep": ["{{ team_bucket }}"]}}},
            "env_vars['E']['deep'][0]",
            "(team_bucket)",
        ),
    ],
)
def test_a_template_reading_the_dags_macros_is_refused(
    templated: dict[str, Any], key: str, used: str
) -> None:
    error = dag_jinja_refusal(templated)
    assert error.key == key
    assert error.value == next(iter(_strings(templated[key.split("[")[0]])))
    assert f"user_defined_macros {used}" in str(error)
    assert "start_from_trigger=True" in str(error) and "params" in str(error)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if "{{" in value else []
    items = value.values() if isinstance(value, dict) else value
    return [found for item in items for found in _strings(item)]


@pytest.mark.parametrize(
    "template",
    [
        "{{ ds | shout }}",
        "{{ ds | lower | shout(2) }}",
        "{% filter shout %}{{ ds }}{% endfilter %}",
        "{% if ds is defined %}{{ ds | shout }}{% endif %}",
    ],
)
def test_a_template_applying_the_dags_filters_is_refused(template: str) -> None:
    error = dag_jinja_refusal({"label_selector": template})
    assert (error.key, error.value) == ("label_selector", template)
    assert "user_defined_filters (shout)" in str(error)


@pytest.mark.parametrize(
    "template",
    [
        "{{ ds }} {{ params.bucket }} {{ macros.ds_add(ds, 1) }}",  # Airflow's own names
        "{% set owner = 'me' %}{{ owner }}",  # the template's own variable
        "{% for team_bucket in params.buckets %}{{ team_bucket }}{% endfor %}",
        "{{ ds | upper }} {{ 'shout' }} owner team_bucket()",  # names outside templates
        "{{ owner",  # does not parse: rendering says why, not this refusal
    ],
)
def test_templates_without_the_dags_names_pass(template: str) -> None:
    refuse_dag_jinja({"conf": {"spark.x": template}}, MACROS, FILTERS)


def test_without_macros_or_filters_nothing_is_read_and_keys_are_never_rendered() -> None:
    refuse_dag_jinja({"conf": {"spark.x": "{{ owner }}"}}, (), ())
    refuse_dag_jinja({"conf": {"{{ owner }}": "v"}}, MACROS, FILTERS)  # Airflow renders values
    assert dag_jinja_refusal({"conf": {"{{ owner }}": "{{ owner }}"}}).key == "conf['{{ owner }}']"


# ------------------------------------------------------------------ the DAG's other Jinja settings

PLAIN = {"conf": {"spark.app.name": "etl", "spark.x": "1"}, "application_args": ["--day"]}


def refused(rule: Any, *args: Any) -> SparkConfError:
    with pytest.raises(SparkConfError) as caught:
        rule(*args)
    return caught.value


@pytest.mark.parametrize(
    ("kwargs", "value"),
    [
        ({"keep_trailing_newline": True}, "{{ ds }}"),
        ({"trim_blocks": True}, "{% if ds %}x{% endif %}"),
        ({"lstrip_blocks": True}, "x{# a note #}"),
        ({"variable_start_string": "[[", "variable_end_string": "]]"}, "etl-[[ ds ]]"),
        ({"block_start_string": "<%", "block_end_string": "%>"}, "<% if ds %>x<% endif %>"),
        ({"comment_start_string": "<#", "comment_end_string": "#>"}, "etl<# a note #>"),
    ],
)
def test_a_template_under_the_dags_jinja_environment_kwargs_is_refused(
    kwargs: dict[str, Any], value: str
) -> None:
    templated = {**PLAIN, "conf": {"spark.x": "1", "spark.app.name": value}}
    error = refused(refuse_jinja_kwargs, templated, kwargs)
    assert (error.key, error.value) == ("conf['spark.app.name']", value)
    assert f"jinja_environment_kwargs ({', '.join(sorted(kwargs))})" in str(error)
    assert "start_from_trigger=True" in str(error) and "serialized DAG" in str(error)


def test_jinja_environment_kwargs_without_any_template_are_accepted() -> None:
    refuse_jinja_kwargs(PLAIN, {"variable_start_string": "[[", "keep_trailing_newline": True})
    refuse_jinja_kwargs({"conf": {"spark.x": "{{ ds }}"}}, {})  # no kwargs: Airflow's own
    # A template in a dict's key is never rendered.
    refuse_jinja_kwargs({"conf": {"{{ ds }}": "1"}}, {"trim_blocks": True})


class LenientUndefined(jinja2.Undefined):
    pass


@pytest.mark.parametrize(
    "undefined",
    [jinja2.Undefined, jinja2.DebugUndefined, jinja2.ChainableUndefined, LenientUndefined],
)
def test_a_template_under_a_dags_own_undefined_is_refused(undefined: type) -> None:
    templated = {**PLAIN, "application_args": ["--day", "{{ ds }}"]}
    error = refused(refuse_template_undefined, templated, qualified_name(undefined))
    assert (error.key, error.value) == ("application_args[1]", "{{ ds }}")
    assert f"template_undefined ({qualified_name(undefined)})" in str(error)
    assert "StrictUndefined" in error.accepted and "start_from_trigger=False" in error.accepted


def test_a_dags_own_undefined_without_templates_and_strict_undefined_are_accepted() -> None:
    assert STRICT_UNDEFINED == "jinja2.runtime.StrictUndefined"
    refuse_template_undefined(PLAIN, qualified_name(jinja2.Undefined))
    refuse_template_undefined({"name": "{{ ds }}"}, STRICT_UNDEFINED)


EXT = (".yaml", ".yml", ".json")


@pytest.mark.parametrize(
    ("template", "tag"),
    [
        ("{% include 'pod.yaml' %}", "{% include %}"),
        ("{% import 'macros.j2' as m %}{{ m.bucket() }}", "{% import %}"),
        ("{% from 'macros.j2' import bucket %}{{ bucket() }}", "{% from ... import %}"),
        ("{% extends 'base.txt' %}", "{% extends %}"),
        ("{% if ds %}{% include params.part %}{% endif %}", "{% include %}"),
    ],
)
def test_a_template_reading_a_template_file_is_refused(template: str, tag: str) -> None:
    templated = {**PLAIN, "conf": {"spark.x": "1", "spark.app.name": template}}
    error = refused(refuse_template_files, templated, EXT)
    assert (error.key, error.value) == ("conf['spark.app.name']", template)
    assert tag in str(error) and "template_searchpath" in str(error)
    assert error.accepted.startswith("the template inlined")


@pytest.mark.parametrize(
    ("templated", "key", "value"),
    [
        ({"application_args": ["--conf", "settings.json"]}, "application_args[1]", "settings.json"),
        ({"conf": {"spark.x": "/opt/airflow/dags/x.yml"}}, "conf['spark.x']", "/opt/airflow/dags/x.yml"),
        ({"env_vars": {"SETTINGS": "team/settings.yaml"}}, "env_vars['SETTINGS']", "team/settings.yaml"),
    ],
)  # fmt: skip
def test_a_value_naming_a_template_file_is_refused(
    templated: dict[str, Any], key: str, value: str
) -> None:
    error = refused(refuse_template_files, templated, EXT)
    assert (error.key, error.value) == (key, value)
    assert "as a template file" in str(error) and "DAG's folder" in str(error)


def test_template_files_not_read_are_accepted_and_local_files_are_refused_once() -> None:
    accepted = {
        "conf": {"spark.x": "s3a://b/conf.json", "spark.y": "local:///opt/x.yaml"},
        "application_args": ["{{ ds }}.json", "{% raw %}{% include %}{% endraw %}", "x.txt"],
        "name": "{% include",  # does not parse: rendering says why
    }
    refuse_template_files(accepted, EXT)
    refuse_template_files({"application_args": ["settings.json"]}, ())  # the sensor: no ext
    # Those refuse_local_files refuses as files on disk, this rule leaves to it.
    already = {
        "files": "conf.yaml",
        "driver_pod_template": "pod.yaml",
        "conf": {"spark.kubernetes.executor.podTemplateFile": "pod.yml"},
    }
    refuse_template_files(already, EXT)
    with pytest.raises(SparkConfError) as caught:
        check_worker_free(already)
    assert caught.value.key == "files"


def test_the_dags_settings_are_checked_first_found_first() -> None:
    templated = {"name": "{% include 'x' %}", "namespace": "{{ owner }}"}
    check_dag_templates(PLAIN, EXT, DagJinja(MACROS, FILTERS, {"trim_blocks": True}, "x.Undefined"))
    check_dag_templates({"name": "{{ ds }}"}, EXT, DagJinja())
    assert refused(check_dag_templates, templated, EXT, DagJinja(MACROS)).key == "namespace"
    error = refused(check_dag_templates, templated, EXT, DagJinja(undefined="x.Undefined"))
    assert error.key == "name" and "template_undefined (x.Undefined)" in str(error)
    assert "{% include %}" in str(refused(check_dag_templates, templated, EXT, DagJinja()))
