"""How a worker-free task ends, for the operator's and the sensor's triggers alike: the
event that ends it in the triggerer, and, the one case a worker still runs for it, its end
in a worker. And what both faces check before it starts: its templates against the Jinja
settings of its DAG that the triggerer never sees and against template files, whenever it
joins a DAG (`checked_dag`), and, in the triggerer, a template that does not render, which
ends the task as invalid input naming its parameter (`render_task_fields`).

Airflow 3.3 retries a `TaskFailedEvent` whenever the task has tries left, whatever the
failure; so a failure that must not retry (an application error in a task with retries,
a sensor's timeout: `application/task/task_end.py`) comes back as a plain event, and
`end_in_worker` fails the task without a retry, after pushing the XComs the trigger
gathered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, NoReturn

import jinja2

from airflow_provider_sparkk8s.application.task.task_end import (
    INVALID_INPUT,
    SENSOR_TIMEOUT,
    WORKER_END_METHOD,
    TaskEnd,
    failure_of,
    is_worker_end,
)
from airflow_provider_sparkk8s.application.task.worker_free_templates import (
    DAG_JINJA,
    DagJinja,
    check_dag_templates,
    qualified_name,
)
from airflow_provider_sparkk8s.version_compat import (
    AirflowFailException,
    AirflowSensorTimeout,
    StartTriggerArgs,
    TaskFailedEvent,
    TaskSkippedEvent,
    TaskSuccessEvent,
    TriggerEvent,
    not_retried,
    task_template_env,
)

# (task instance, key, value): how a trigger stores one XCom of its task.
PushXcom = Callable[[Any, str, Any], None]


def start_args(
    trigger_cls: str, kwargs: dict[str, Any], timeout: timedelta | None
) -> StartTriggerArgs:
    """What Airflow starts a worker-free task with: its trigger, the task's parameters as
    the trigger's kwargs, and the end in a worker a handed-over event resumes."""
    return StartTriggerArgs(
        trigger_cls=trigger_cls,
        trigger_kwargs=kwargs,
        next_method=WORKER_END_METHOD,
        next_kwargs={},
        timeout=timeout,
    )


def check_dag_jinja(task: Any) -> None:
    """A worker-free task's templated values against its DAG's Jinja settings that the
    triggerer never sees, and against template files, once it has a DAG
    (`application/task/worker_free_templates.py`)."""
    if not task.has_dag():
        return
    dag = task.dag
    templated = {name: getattr(task, name, None) for name in task.template_fields}
    settings = DagJinja(
        macros=list(dag.user_defined_macros or {}),
        filters=list(dag.user_defined_filters or {}),
        environment_kwargs=dict(dag.jinja_environment_kwargs or {}),
        undefined=qualified_name(dag.template_undefined),
    )
    check_dag_templates(templated, tuple(task.template_ext or ()), settings)


def checked_dag(base: Any) -> Any:
    """BaseOperator's `dag`, whose setter every way of giving a task its DAG goes through
    (`dag=`, `with DAG(...)`, `task.dag = dag`, `dag.add_task(task)`): a worker-free task
    (its `start_trigger_args` set, at the end of its __init__) is checked against the DAG
    it joins after its __init__ as against the one it had there."""
    assert base.fget is not None and base.fset is not None
    assign = base.fset

    def set_dag(task: Any, dag: Any) -> None:
        assign(task, dag)
        if dag is not None and getattr(task, "start_trigger_args", None) is not None:
            check_dag_jinja(task)

    return property(base.fget, set_dag, doc=base.__doc__)


def renders_native(task: Any) -> bool:
    """Whether a worker renders the task's fields as native objects: the task's own
    setting, else its DAG's (both travel in the serialized DAG)."""
    own = getattr(task, "render_template_as_native_obj", None)
    if own is not None:
        return bool(own)
    return bool(getattr(getattr(task, "dag", None), "render_template_as_native_obj", False))


def worker_template_env(task: Any) -> Any:
    """The environment a worker would render the task's fields in: its DAG's, where the
    task has a DAG object; else (the triggerer's serialized DAG, which has no environment)
    Airflow's for a DAG without macros or filters of its own, which is what a worker-free
    DAG may use (`check_dag_jinja`): so a misspelt name fails the task, as in a worker,
    instead of rendering as an empty string."""
    dag: Any = getattr(task, "dag", None)
    if hasattr(dag, "get_template_env"):
        return dag.get_template_env(force_sandboxed=False)  # as Airflow's Templater asks it
    return task_template_env(renders_native(task))


def render_task_fields(trigger: Any, context: Any, jinja_env: Any = None) -> str | None:
    """The task's templated fields rendered on the trigger, as BaseTrigger renders them, a
    field at a time; a template that does not render (a name undefined, a filter unknown)
    returns the message that ends the task as invalid input, naming its parameter, where
    the triggerer would fail the trigger with a traceback, to be retried in a worker."""
    task = getattr(trigger, "task", None)
    # Templater's `_render` asks the renderer itself, here the trigger.
    trigger.render_template_as_native_obj = renders_native(task)
    env = jinja_env or worker_template_env(task)
    for name in trigger.template_fields:
        value = getattr(trigger, name)
        if not value:
            continue
        try:
            rendered = trigger.render_template(value, context, env, set())
        except jinja2.TemplateError as error:
            # The field's name, not its value: a dict such as conf may hold secrets.
            message = (
                f"{name}: a template does not render in the triggerer "
                f"({type(error).__name__}: {error})"
            )
            if isinstance(error, (jinja2.UndefinedError, jinja2.TemplateAssertionError)):
                # A name or a filter it does not know: the DAG's own, most likely.
                which = "user_defined_macros and user_defined_filters"
                message += f"; {DAG_JINJA.format(which=which)}"
            return message
        setattr(trigger, name, rendered)
    return None


async def end_event(end: TaskEnd, ti: Any, log: Any, push: PushXcom) -> TriggerEvent:
    """The event that ends the task: a success, skip or failure in the triggerer, after
    its XComs are pushed; or the plain event a worker fails the task from."""
    if end.in_worker and not end.succeeded:
        log.error("%s", end.failure.get("message"))
        log.info("Not retried: a worker fails the task (Airflow would retry it)")
        return TriggerEvent(end.worker_payload())
    xcoms = await _push(end.xcoms, ti, push)
    if end.succeeded:
        return TaskSuccessEvent(xcoms=xcoms)
    if end.skipped:
        log.info("%s; skipped (soft_fail)", end.failure.get("message"))
        return TaskSkippedEvent(xcoms=xcoms)
    log.error("%s", end.failure.get("message"))
    return TaskFailedEvent(xcoms=xcoms)


async def _push(xcoms: Mapping[str, Any], ti: Any, push: PushXcom) -> dict[str, Any] | None:
    """Push the XComs as a worker does, through the triggerer's task instance; what is
    left for the event (none, unless this task instance cannot push). Airflow 3.3.2
    stores an end event's XComs JSON-encoded twice (seen on the real triggerer: a
    downstream task would pull a string), so they do not travel in the event."""
    if ti is None or not xcoms:  # not run by a triggerer
        return dict(xcoms) or None
    for key, value in xcoms.items():
        await asyncio.to_thread(push, ti, key, value)
    return None


def end_in_worker(event: Any, xcom_push: Callable[..., Any]) -> NoReturn:
    """Push the event's XComs, then raise its failure as one Airflow does not retry."""
    if not is_worker_end(event):
        raise AirflowFailException(f"A worker-free task resumed without its end: {event!r}")
    for key, value in (event.get("xcoms") or {}).items():
        xcom_push(key=key, value=value)
    failure = event.get("failure") or {}
    if failure.get("kind") == INVALID_INPUT:
        raise AirflowFailException(f"{failure.get('message')} (invalid input: not retried)")
    if failure.get("kind") == SENSOR_TIMEOUT:
        raise AirflowSensorTimeout(str(failure.get("message")))  # Airflow never retries it
    error = failure_of(failure)
    raise not_retried(error, error.kind.replace("_", " "))
