"""What the worker-free mode (`start_from_trigger=True`) refuses, decided on plain data.

In that mode no worker ever runs the task: the triggerer renders the parameters, submits,
follows and ends the task. So whatever needs a worker's disk or a worker's Python is refused
when the DAG is parsed (and again on the rendered values, in the trigger, before anything is
sent): local files to upload, pod template files, a properties file or a keytab read from
disk, user Python feature steps, callables, values that are not plain JSON, and an Airflow
that does not render templates in the triggerer; for the application sensor, the settings of
a poke (it never pokes). Templates that need what the triggerer never sees are refused by
`worker_free_templates`. Each refusal is a `SparkConfError` naming the parameter, its value
and why.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.builder import OPTIONAL_STEPS, USER_STEPS_KEY
from airflow_provider_sparkk8s.submission.uris import is_local_dependency

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


def holds_template(value: str) -> bool:
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
        if not holds_template(entry) and is_local_dependency(entry):
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
        if isinstance(value, str) and value.strip() and not holds_template(value):
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
        if entry not in OPTIONAL_STEPS and not holds_template(entry):
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


def check_plain(parameters: Mapping[str, Any]) -> None:
    """The trigger's kwargs travel as JSON: no callables, no objects."""
    for name, value in parameters.items():
        refuse_unplain(name, value)


def check_worker_free(parameters: Mapping[str, Any]) -> None:
    """Every refusal on the task's parameters (the trigger's kwargs), first found first."""
    check_plain(parameters)
    refuse_local_files(parameters)
    refuse_user_steps(parameters.get("conf") or {})
