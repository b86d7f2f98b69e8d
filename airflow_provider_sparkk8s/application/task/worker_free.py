"""What the worker-free mode (`start_from_trigger=True`) refuses, decided on plain data.

In that mode no worker ever runs the task: the triggerer renders the parameters, submits,
follows and ends the task. So whatever needs a worker's disk or a worker's Python is refused
when the DAG is parsed (and again on the rendered values, in the trigger, before anything is
sent): local files to upload, pod template files, a properties file or a keytab read from
disk, user Python feature steps, callables, values that are not plain JSON, templates that
need the DAG's own Jinja settings, which the serialized DAG (the triggerer's only DAG) leaves
out (its `user_defined_macros` and `user_defined_filters`, its `jinja_environment_kwargs`, a
`template_undefined` other than Airflow's StrictUndefined), templates that read template
files (`{% include %}`, `{% import %}`, `{% extends %}`, a value naming a .yaml/.json file:
the triggerer has neither the DAG's folder nor its `template_searchpath`), and an Airflow
that does not render templates in the triggerer; for the application sensor, the settings of
a poke (it never pokes). Each refusal is a `SparkConfError` naming the parameter, its value
and why.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from jinja2 import meta, nodes

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.builder import OPTIONAL_STEPS, USER_STEPS_KEY
from airflow_provider_sparkk8s.submission.uris import is_local_dependency, uri_scheme

SWITCH = "start_from_trigger"
# SparkSubmitOperator's dependency lists: a local entry is uploaded from the submitter's disk.
DEPENDENCY_PARAMETERS = ("application", "files", "py_files", "jars", "archives")
# The same lists, and the pod template files, given as Spark conf.
LOCAL_FILE_CONF_KEYS = (
    "spark.jars",
    "spark.files",
    "spark.submit.pyFiles",
    "spark.archives",
    "spark.kubernetes.driver.podTemplateFile",
    "spark.kubernetes.executor.podTemplateFile",
)
# Files the submission reads from the submitter's disk.
FILE_PARAMETERS = ("driver_pod_template", "executor_pod_template", "properties_file", "keytab")
NO_WORKER = "a worker-free task runs in the triggerer, which has no worker's disk"
REMOTE = (
    "a remote URI (s3a://, gs://, abfs://, https://...) or local:// (inside the image); "
    "upload it beforehand, or set start_from_trigger=False"
)


def _templated(value: str) -> bool:
    """A Jinja template, checked once the triggerer has rendered it."""
    return "{{" in value or "{%" in value


def _entries(value: str | Sequence[str] | None) -> Iterator[str]:
    if value is None:
        return
    items = value.split(",") if isinstance(value, str) else [str(item) for item in value]
    for item in items:
        if item.strip():
            yield item.strip()


def _local_entries(name: str, value: Any) -> Iterator[tuple[str, str]]:
    for entry in _entries(value):
        if not _templated(entry) and is_local_dependency(entry):
            yield name, entry


def refuse_local_files(parameters: Mapping[str, Any]) -> None:
    """Local files to upload, pod template files, a properties file or keytab: the
    submission would read them from the disk of the process that submits."""
    conf = parameters.get("conf") or {}
    named = [(name, parameters.get(name)) for name in DEPENDENCY_PARAMETERS]
    named += [(f"conf[{key!r}]", conf.get(key)) for key in LOCAL_FILE_CONF_KEYS]
    found = [hit for name, value in named for hit in _local_entries(name, value)]
    if found:
        name, entry = found[0]
        raise SparkConfError(name, entry, REMOTE, f"{SWITCH}=True: {NO_WORKER}")
    for name in FILE_PARAMETERS:
        value = parameters.get(name)
        if isinstance(value, str) and value.strip() and not _templated(value):
            accepted = "a dict" if name.endswith("pod_template") else "None"
            raise SparkConfError(
                name,
                value,
                accepted,
                f"{SWITCH}=True: the file would be read from disk; {NO_WORKER}",
            )


def refuse_user_steps(conf: Mapping[str, Any]) -> None:
    """User feature steps are Python imported by the submitter: not in the triggerer."""
    for entry in _entries(conf.get(USER_STEPS_KEY)):
        if entry not in OPTIONAL_STEPS and not _templated(entry):
            raise SparkConfError(
                f"conf[{USER_STEPS_KEY!r}]",
                entry,
                f"one of Spark's optional steps ({', '.join(sorted(OPTIONAL_STEPS))})",
                f"{SWITCH}=True: user Python steps would be imported and run in the triggerer",
            )


def refuse_unplain(name: str, value: Any) -> None:
    """Trigger kwargs are stored in Airflow's database as JSON: no callables, no objects."""
    if callable(value):
        raise SparkConfError(
            name, value, "plain data (a string, number, list or dict)",
            f"{SWITCH}=True: a callable cannot be sent to the triggerer",
        )  # fmt: skip
    if isinstance(value, Mapping):
        for key, item in value.items():
            refuse_unplain(f"{name}[{key!r}]", item)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            refuse_unplain(f"{name}[{index}]", item)
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise SparkConfError(
            name, value, "plain data (a string, number, list or dict)",
            f"{SWITCH}=True: the task's parameters travel to the triggerer as JSON",
        )  # fmt: skip


def refuse_airflow(version: str, renders: bool) -> None:
    """Airflow before 3.3 starts the trigger without rendering its templates."""
    if not renders:
        raise SparkConfError(
            SWITCH, True, "False on this Airflow",
            f"Airflow {version} does not render a trigger's template fields in the "
            "triggerer; the worker-free mode needs Airflow 3.3 or later",
        )  # fmt: skip


def refuse_without_adoption(reattach_on_restart: bool) -> None:
    """A triggerer that restarts runs the trigger again: it must adopt its driver."""
    if not reattach_on_restart:
        raise SparkConfError(
            "reattach_on_restart", False, "True",
            f"{SWITCH}=True: a trigger that runs again (a triggerer restart or failover) "
            "adopts the driver it submitted; without adoption it would submit a second one",
        )  # fmt: skip


# The sensor's settings that only a poke in a worker reads: (their default, what is
# accepted, why).
POKE_ONLY: dict[str, tuple[Any, str, str]] = {
    "mode": (
        "poke", "'poke' (the default)", "reschedule mode runs each poke as a task in a worker"
    ),
    "exponential_backoff": (
        False, "False", "it spaces the pokes of a worker; the triggerer follows the pods"
    ),
    "max_wait": (None, "None", "it bounds exponential_backoff's waits between pokes"),
    "silent_fail": (False, "False", "it ignores a poke's errors, and no poke runs"),
    "never_fail": (False, "False (soft_fail skips a timeout)", "it skips on a poke's errors"),
}  # fmt: skip


def refuse_poke_only(settings: Mapping[str, Any]) -> None:
    """A worker-free sensor never pokes: the settings of a poke are refused, not ignored."""
    for name, (default, accepted, why) in POKE_ONLY.items():
        value = settings.get(name, default)
        if value != default:
            raise SparkConfError(name, value, accepted, f"{SWITCH}=True: {why}")


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
    return ((path, value) for path, value in _all_strings(templated) if _templated(value))


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
        and not _templated(value)
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


@dataclass(frozen=True)
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


def check_plain(parameters: Mapping[str, Any]) -> None:
    """The trigger's kwargs travel as JSON: no callables, no objects."""
    for name, value in parameters.items():
        refuse_unplain(name, value)


def check_worker_free(parameters: Mapping[str, Any]) -> None:
    """Every refusal on the task's parameters (the trigger's kwargs), first found first."""
    check_plain(parameters)
    refuse_local_files(parameters)
    refuse_user_steps(parameters.get("conf") or {})
