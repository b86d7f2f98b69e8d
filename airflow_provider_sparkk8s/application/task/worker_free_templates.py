"""What the worker-free mode refuses in a task's templates, decided on plain data: what a
worker's rendering would take from the DAG that the serialized DAG, the triggerer's only one,
leaves out. Its `user_defined_macros` and `user_defined_filters`, its
`jinja_environment_kwargs`, a `template_undefined` other than Airflow's StrictUndefined, and
template files (`{% include %}`, `{% import %}`, `{% extends %}`, a value naming a .yaml or
.json file), which the triggerer cannot read without the DAG's folder or its
`template_searchpath`. Each refusal is a `SparkConfError` naming the parameter, its value and
why.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any

import jinja2
from jinja2 import meta, nodes

from airflow_provider_sparkk8s.application.task.worker_free import (
    DEPENDENCY_PARAMETERS,
    FILE_PARAMETERS,
    LOCAL_FILE_CONF_KEYS,
    SWITCH,
    holds_template,
)
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.uris import uri_scheme

DAG_JINJA = (
    "the triggerer renders with Airflow's default Jinja environment, which the DAG's "
    "{which} do not reach (the serialized DAG leaves them out); pass the value through "
    "params or set start_from_trigger=False"
)


def _strings(name: str, value: Any) -> Iterator[tuple[str, str]]:
    """The strings of a parameter, each under its path; Airflow renders the values of a
    dict, never its keys."""
    if isinstance(value, str):
        yield name, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(f"{name}[{key!r}]", item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for index, item in enumerate(value):
            yield from _strings(f"{name}[{index}]", item)


def _all_strings(templated: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for name, value in templated.items():
        yield from _strings(name, value)


def _templates(templated: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The templated strings of the task's templated parameters, each under its path."""
    return ((path, value) for path, value in _all_strings(templated) if holds_template(value))


def _parser() -> jinja2.Environment:
    """Airflow's environment knows `{% do %}`."""
    return jinja2.Environment(extensions=["jinja2.ext.do"])


def _parsed(template: str, parser: jinja2.Environment | None = None) -> nodes.Template | None:
    """The template's tree; None when it does not parse (rendering says why)."""
    try:
        return (parser or _parser()).parse(template)
    except jinja2.TemplateSyntaxError:
        return None


def _stand_in(*args: Any, **kwargs: Any) -> Any:
    """A filter or test the template names, so that it compiles; never called."""


def _dag_names_used(
    template: str, macros: Collection[str], filters: Collection[str]
) -> tuple[list[str], list[str]]:
    """The DAG's macros a template reads (names it does not set itself) and the DAG's
    filters it applies; none when it does not parse (rendering says why)."""
    # The variables are found by compiling, which needs every filter and test the template
    # names to exist.
    parser = _parser()
    tree = _parsed(template, parser)
    if tree is None:
        return [], []
    applied = {node.name for node in tree.find_all(nodes.Filter)}
    tested = {node.name for node in tree.find_all(nodes.Test)}
    parser.filters.update(dict.fromkeys(applied, _stand_in))
    parser.tests.update(dict.fromkeys(tested, _stand_in))
    read = meta.find_undeclared_variables(tree)
    return sorted(read & set(macros)), sorted(applied & set(filters))


def refuse_dag_jinja(
    templated: Mapping[str, Any], macros: Collection[str], filters: Collection[str]
) -> None:
    """A template that uses the DAG's `user_defined_macros` or `user_defined_filters`:
    Airflow leaves both out of the serialized DAG, the triggerer's only DAG, so there a
    macro's name is undefined (an empty string, or an error when called) and a filter's an
    error, where a worker renders them."""
    if not macros and not filters:
        return
    for path, template in _templates(templated):
        used_macros, used_filters = _dag_names_used(template, macros, filters)
        for which, used in (
            ("user_defined_macros", used_macros), ("user_defined_filters", used_filters)
        ):  # fmt: skip
            if used:
                raise SparkConfError(
                    path, template, f"a template without the DAG's {which} ({', '.join(used)})",
                    f"{SWITCH}=True: {DAG_JINJA.format(which=which)}",
                )  # fmt: skip


def qualified_name(cls: type) -> str:
    """A class as plain data: `jinja2.runtime.StrictUndefined`."""
    return f"{cls.__module__}.{cls.__qualname__}"


STRICT_UNDEFINED = qualified_name(jinja2.StrictUndefined)  # Airflow's default
# A template with Airflow's delimiters, and the keys that give a DAG its own.
DEFAULT_STARTS = ("{{", "{%", "{#")
DELIMITER_KEYS = ("variable_start_string", "block_start_string", "comment_start_string")
# Why a DAG setting is refused: the triggerer renders without it.
DEFAULT_ENV = "the triggerer renders with Airflow's default Jinja environment"


def refuse_jinja_kwargs(templated: Mapping[str, Any], kwargs: Mapping[str, Any]) -> None:
    """The DAG's `jinja_environment_kwargs` shape how a worker renders (delimiters,
    whitespace, undefined...): any template, with Airflow's delimiters or the DAG's own,
    would render otherwise in the triggerer."""
    if not kwargs:
        return
    own = tuple(str(kwargs[key]) for key in DELIMITER_KEYS if kwargs.get(key))
    keys = ", ".join(sorted(map(str, kwargs)))
    for path, value in _all_strings(templated):
        if any(start in value for start in DEFAULT_STARTS + own):
            raise SparkConfError(
                path, value,
                "a value without a template, a DAG without jinja_environment_kwargs, "
                "or start_from_trigger=False",
                f"{SWITCH}=True: the DAG's jinja_environment_kwargs ({keys}) do not reach the "
                f"triggerer (the serialized DAG leaves them out); {DEFAULT_ENV}",
            )  # fmt: skip


def refuse_template_undefined(templated: Mapping[str, Any], undefined: str) -> None:
    """A DAG's `template_undefined` (its qualified name) other than StrictUndefined: a
    worker renders an undefined name with it, the triggerer with StrictUndefined."""
    if undefined == STRICT_UNDEFINED:
        return
    for path, value in _templates(templated):
        raise SparkConfError(
            path, value,
            "a DAG whose template_undefined is jinja2.StrictUndefined (Airflow's default), "
            "or start_from_trigger=False",
            f"{SWITCH}=True: the DAG's template_undefined ({undefined}) does not reach the "
            f"triggerer (the serialized DAG leaves it out); {DEFAULT_ENV}, where an "
            "undefined name fails the task (StrictUndefined)",
        )  # fmt: skip


# The tags that load another template, a file in the DAG's folder or template_searchpath.
FILE_TAGS = {
    nodes.Include: "{% include %}",
    nodes.Import: "{% import %}",
    nodes.FromImport: "{% from ... import %}",
    nodes.Extends: "{% extends %}",
}
NO_TEMPLATE_FILES = (
    "the triggerer has neither the DAG's folder nor its template_searchpath to read it from"
)
INLINED = "the template inlined (its text as the value), or start_from_trigger=False"


def _file_tags(template: str) -> list[str]:
    tree = _parsed(template)
    if tree is None:
        return []
    return [tag for kind, tag in FILE_TAGS.items() if tree.find(kind) is not None]


def _names_template_file(value: str, template_ext: Sequence[str]) -> bool:
    """A bare path ending in a template extension, which a worker's Airflow reads as a
    template file when the DAG's folder, its template_searchpath or the absolute path
    has it (operators/template_files.py); the triggerer keeps it a string."""
    return (
        bool(template_ext)
        and value.endswith(tuple(template_ext))
        and not holds_template(value)
        and uri_scheme(value) is None
    )


def _not_refused_as_local_files(templated: Mapping[str, Any]) -> dict[str, Any]:
    """The values `refuse_local_files` does not already refuse when they name a file."""
    rest = {
        name: value
        for name, value in templated.items()
        if name not in DEPENDENCY_PARAMETERS + FILE_PARAMETERS
    }
    if isinstance(rest.get("conf"), Mapping):
        rest["conf"] = {k: v for k, v in rest["conf"].items() if k not in LOCAL_FILE_CONF_KEYS}
    return rest


def refuse_template_files(templated: Mapping[str, Any], template_ext: Sequence[str]) -> None:
    """A template that loads another, or a value naming a template file: a worker reads the
    file, the triggerer cannot."""
    for path, value in _templates(templated):
        tags = _file_tags(value)
        if tags:
            raise SparkConfError(
                path, value, INLINED,
                f"{SWITCH}=True: it reads a template file ({', '.join(tags)}); {NO_TEMPLATE_FILES}",
            )  # fmt: skip
    for path, value in _all_strings(_not_refused_as_local_files(templated)):
        if _names_template_file(value, template_ext):
            raise SparkConfError(
                path, value, INLINED,
                f"{SWITCH}=True: a worker reads a value ending in {', '.join(template_ext)} "
                f"as a template file; {NO_TEMPLATE_FILES}",
            )  # fmt: skip


@record
class DagJinja:
    """A DAG's Jinja settings that Airflow leaves out of the serialized DAG, as plain data:
    the names of its macros and filters, its `jinja_environment_kwargs`, and the qualified
    name of its `template_undefined`."""

    macros: Collection[str] = ()
    filters: Collection[str] = ()
    environment_kwargs: Mapping[str, Any] = field(default_factory=dict)
    undefined: str = STRICT_UNDEFINED


def check_dag_templates(
    templated: Mapping[str, Any], template_ext: Sequence[str], dag: DagJinja
) -> None:
    """Every refusal of a task's templated values against its DAG, first found first."""
    refuse_dag_jinja(templated, dag.macros, dag.filters)
    refuse_jinja_kwargs(templated, dag.environment_kwargs)
    refuse_template_undefined(templated, dag.undefined)
    refuse_template_files(templated, template_ext)
