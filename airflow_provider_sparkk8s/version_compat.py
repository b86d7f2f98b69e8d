"""Every Airflow import and behaviour that differs across Airflow versions, in one place.

The rest of the provider imports Airflow only through this module, so it reads as if one
Airflow version existed; supporting another version means changing this file alone.
`tests/test_layering.py` keeps it that way. What changed, by minor (3.0-3.3 supported):

- 3.0: `BaseHook` lives in `airflow.hooks.base`; there is no `aget_connection`, and a sync
  connection read from the triggerer's event loop fails (its comms bridge refuses to block
  the loop), so the read goes through a worker thread (asgiref's `sync_to_async`).
- 3.0, 3.1: `conf` is `airflow.configuration.conf`; `TaskDeferred` is in `airflow.exceptions`.
- 3.1, 3.2: `aget_connection` exists, `Connection.aextra_dejson` does not; `extra_dejson`
  masks through the sync comms, so it runs in a worker thread too.
- before 3.3: the triggerer never calls a trigger's `on_kill`: marking a deferred task failed
  does not reach the trigger (see `KILL_WHILE_DEFERRED_REACHES_TRIGGER`).
- before 3.3: no retry policies (AIP-105): `RETRY_POLICIES` is False and the policy classes
  are None; an application error then fails with `AirflowFailException` instead.
- before 3.3: the triggerer does not render a trigger's template fields when a task starts from
  the trigger, so the worker-free mode (`start_from_trigger=True`) needs 3.3
  (`START_FROM_TRIGGER_RENDERS`). On 3.3, a trigger's `TaskFailedEvent` retries while the task
  has tries left (`TaskInstance.is_eligible_to_retry`) and never asks its retry policy.
- Stats: 3.0 and 3.1 have `airflow.stats.Stats`, which builds its backend from `[metrics]` on
  first use in any process. 3.2+ have `airflow.sdk.observability.stats`, a module-level
  backend that a process must initialise: the task runner does, but the triggerer
  initialises only its core copy (`airflow.observability.stats`) before it forks the trigger
  runner, so there the SDK's is initialised here, from the same config (see `stats`).
"""

from __future__ import annotations

import inspect
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow import __version__ as _airflow_version
from packaging.version import Version

AIRFLOW_VERSION = Version(Version(_airflow_version).base_version)
AIRFLOW_V_3_1_PLUS = Version("3.1.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_2_PLUS = Version("3.2.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_3_PLUS = Version("3.3.0") <= AIRFLOW_VERSION
# The triggerer calls `on_kill` of a trigger whose task a user marked failed (3.3+ only).
KILL_WHILE_DEFERRED_REACHES_TRIGGER = AIRFLOW_V_3_3_PLUS
# Operators take `retry_policy=` and the task runner asks it after a failure (3.3+ only).
RETRY_POLICIES = AIRFLOW_V_3_3_PLUS
# The triggerer renders a start-from-trigger task's template fields with its context (3.3+).
START_FROM_TRIGGER_RENDERS = AIRFLOW_V_3_3_PLUS

from airflow.sdk import (  # noqa: E402
    BaseOperator,
    BaseOperatorLink,
    BaseSensorOperator,
    PokeReturnValue,
)
from airflow.triggers.base import (  # noqa: E402
    BaseTrigger,
    StartTriggerArgs,
    TaskFailedEvent,
    TaskSkippedEvent,
    TaskSuccessEvent,
    TriggerEvent,
)

try:
    from airflow.sdk.exceptions import (
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
        AirflowTaskTimeout,
        TaskDeferralTimeout,
    )
except ImportError:  # Airflow 3.0, 3.1
    from airflow.exceptions import (  # type: ignore[no-redef]
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
        AirflowTaskTimeout,
        TaskDeferralTimeout,
    )
# How a deferral's timeout comes back to the task, the same on 3.0-3.3: the scheduler
# resumes it with this method and error, and BaseOperator.resume_execution raises
# TaskDeferralTimeout without calling the operator (nor the trigger's on_kill).
from airflow.sdk.bases.operator import (  # noqa: E402
    TRIGGER_FAIL_REPR,
    TriggerFailureReason,
)

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey as TaskInstanceKey

if TYPE_CHECKING or AIRFLOW_V_3_1_PLUS:
    from airflow.sdk import BaseHook
else:  # 3.0
    from airflow.hooks.base import BaseHook

if TYPE_CHECKING or AIRFLOW_V_3_3_PLUS:
    from airflow.sdk.definitions.retry_policy import (
        ExceptionRetryPolicy,
        RetryAction,
        RetryDecision,
        RetryRule,
    )
else:  # 3.0-3.2: no retry policies
    ExceptionRetryPolicy = RetryAction = RetryDecision = RetryRule = None

if TYPE_CHECKING or AIRFLOW_V_3_2_PLUS:
    from airflow.sdk.configuration import conf
    from airflow.sdk.exceptions import TaskDeferred
else:  # 3.0, 3.1
    from airflow.configuration import conf
    from airflow.exceptions import TaskDeferred

__all__ = [
    "AIRFLOW_VERSION",
    "AIRFLOW_V_3_1_PLUS",
    "AIRFLOW_V_3_2_PLUS",
    "AIRFLOW_V_3_3_PLUS",
    "KILL_WHILE_DEFERRED_REACHES_TRIGGER",
    "RETRY_POLICIES",
    "START_FROM_TRIGGER_RENDERS",
    "AirflowFailException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "AirflowTaskTimeout",
    "BaseHook",
    "BaseOperator",
    "BaseOperatorLink",
    "BaseSensorOperator",
    "BaseTrigger",
    "ExceptionRetryPolicy",
    "PokeReturnValue",
    "RetryAction",
    "RetryDecision",
    "RetryRule",
    "StartTriggerArgs",
    "TaskDeferralTimeout",
    "TaskDeferred",
    "TaskFailedEvent",
    "TaskSkippedEvent",
    "TaskSuccessEvent",
    "TriggerEvent",
    "aget_connection_extra",
    "airflow_plugin_class",
    "amask_secrets",
    "atask_states",
    "conf",
    "dag_reader_dependency",
    "is_deferral_timeout",
    "mask_secret",
    "metrics_configured",
    "not_retried",
    "object_storage_fs",
    "openlineage_conf",
    "openlineage_lineage",
    "openlineage_spark",
    "stats",
    "stats_backend",
    "task_instance_xcom",
    "time_delta_trigger",
    "xcom_value",
]


def is_deferral_timeout(next_method: str, next_kwargs: Any) -> bool:
    """A resume that is Airflow failing the task because its deferral timed out."""
    error = (next_kwargs or {}).get("error") if isinstance(next_kwargs, dict) else None
    return next_method == TRIGGER_FAIL_REPR and error == TriggerFailureReason.TRIGGER_TIMEOUT


_NOT_RETRIED: dict[type[Exception], type[Exception]] = {}


def not_retried(error: Exception, why: str) -> Exception:
    """`error` as an AirflowFailException too (Airflow never retries one), still of its own
    class, so `except` clauses for either catch it. For Airflow before 3.3, where no retry
    policy can say "fail now"."""
    cls = type(error)
    both = _NOT_RETRIED.get(cls)
    if both is None:
        both = type(cls.__name__, (AirflowFailException, cls), {"__module__": cls.__module__})
        _NOT_RETRIED[cls] = both
    copy = Exception.__new__(both)  # no __init__: the attributes are copied below
    copy.__dict__.update(error.__dict__)
    copy.args = (f"{error} ({why}: not retried)",)
    return copy


def mask_secret(value: str) -> None:
    """Register `value` with Airflow's log masker (a no-op where there is none)."""
    try:
        from airflow.sdk.log import mask_secret as mask
    except ImportError:
        return
    mask(value)


async def amask_secrets(values: list[str]) -> None:
    """Register secrets with the log masker from the event loop (task and supervisor)."""
    if not values:
        return
    if AIRFLOW_V_3_3_PLUS:
        from airflow.sdk.log import amask_secret

        for value in values:
            await amask_secret(value)
        return
    from asgiref.sync import sync_to_async

    def mask_all() -> None:
        for value in values:
            mask_secret(value)

    await sync_to_async(mask_all)()


async def aget_connection_extra(hook: Any, conn_id: str) -> tuple[Any, dict[str, Any]]:
    """(connection, its extra as a dict) without blocking the triggerer's event loop."""
    from asgiref.sync import sync_to_async

    if AIRFLOW_V_3_1_PLUS:
        conn = await hook.aget_connection(conn_id)
    else:
        conn = await sync_to_async(hook.get_connection)(conn_id)
    if AIRFLOW_V_3_3_PLUS:
        extra = await conn.aextra_dejson()
    else:
        extra = await sync_to_async(lambda: conn.extra_dejson)()
    return conn, extra


async def atask_states(
    dag_id: str, run_id: str, task_id: str, map_index: int
) -> dict[str, dict[str, Any]]:
    """Airflow's `get_task_states` answer ({run_id: {task key: state}}) for one task
    instance, asked from a trigger through the triggerer's supervisor without blocking the
    event loop. Raises RuntimeError outside a triggerer (no supervisor to ask)."""
    from airflow.sdk.execution_time import task_runner
    from airflow.sdk.execution_time.comms import GetTaskStates

    comms = getattr(task_runner, "SUPERVISOR_COMMS", None)
    if comms is None or not hasattr(comms, "asend"):
        raise RuntimeError("no triggerer supervisor to ask")
    request = GetTaskStates(
        dag_id=dag_id, task_ids=[task_id], run_ids=[run_id], map_index=map_index
    )
    answer = await comms.asend(request)
    states = getattr(answer, "task_states", None)
    if not isinstance(states, dict):  # an error answer is never read as "no such task"
        raise RuntimeError(f"the supervisor answered {type(answer).__name__}")
    return states


def xcom_value(ti_key: Any, key: str) -> Any:
    """An XCom value of the task instance `ti_key` (what an operator link reads)."""
    from airflow.sdk.execution_time.xcom import XCom

    return XCom.get_value(ti_key=ti_key, key=key)


def push_task_xcom(ti: Any, key: str, value: Any) -> None:
    """Store one XCom of `ti` as a worker's `xcom_push` does (the SDK's XCom, so the
    configured backend), from the triggerer: its task is the serialized one, which lacks
    the `returns_dag_result` that `xcom_push` reads."""
    from airflow.sdk.execution_time.xcom import XCom

    XCom.set(
        key=key,
        value=value,
        dag_id=ti.dag_id,
        task_id=ti.task_id,
        run_id=ti.run_id,
        map_index=getattr(ti, "map_index", -1),
    )


def task_template_env(native: bool) -> Any:
    """The Jinja environment a worker renders a task's fields in, for a DAG without macros
    or filters of its own: an undefined name raises, `{% do %}` works, native objects when
    the DAG asks for them. Airflow 3.3's triggerer renders a trigger's fields in a bare
    sandbox instead, where an undefined name renders as an empty string. 3.3+ (the
    worker-free mode's), whose task SDK has `create_template_env`."""
    from airflow.sdk.definitions._internal.templater import create_template_env

    return create_template_env(native=native)


def time_delta_trigger(delta: timedelta) -> Any:
    """Airflow's trigger that fires once `delta` has passed."""
    from airflow.providers.standard.triggers.temporal import TimeDeltaTrigger

    return TimeDeltaTrigger(delta)


def object_storage_fs(url: str, conn_id: str) -> Any:
    """The fsspec file system Airflow's ObjectStoragePath maps `conn_id` to for `url`.

    Raises ValueError when no installed provider registers a file system for the scheme.
    """
    try:
        from airflow.sdk import ObjectStoragePath
    except ImportError:  # Airflow 3.0
        from airflow.io.path import ObjectStoragePath  # type: ignore[no-redef,import-not-found]
    return ObjectStoragePath(url, conn_id=conn_id).fs


def openlineage_conf() -> Any | None:
    """The openlineage provider's conf module (light to import), or None without it."""
    try:
        from airflow.providers.openlineage import conf as openlineage_settings
    except ImportError:
        return None
    return openlineage_settings


def openlineage_lineage() -> tuple[Any, Any] | None:
    """(OperatorLineage, OpenLineage's RunFacet base class), or None without the provider."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.facet_v2 import RunFacet
    except ImportError:
        return None
    return OperatorLineage, RunFacet


def openlineage_spark() -> Any | None:
    """The openlineage provider's Spark helpers (they load its listener), or None."""
    try:
        from airflow.providers.openlineage.utils import spark as openlineage_spark_helpers
    except ImportError:
        return None
    return openlineage_spark_helpers


def metrics_configured() -> bool:
    """Whether the deployment's `[metrics]` section sends metrics anywhere."""
    return any(
        conf.getboolean("metrics", key, fallback=False)
        for key in ("statsd_on", "statsd_datadog_enabled", "otel_on")
    )


def stats() -> Any:
    """Airflow's Stats (`incr`, `gauge`, `timing` with `tags=`), its backend the one the
    deployment's `[metrics]` configured, in this process."""
    try:
        from airflow.sdk.observability import stats as sdk_stats
    except ImportError:  # 3.0, 3.1
        from airflow.stats import Stats

        return Stats
    backend_module = sys.modules.get(getattr(sdk_stats.incr, "__module__", ""))
    # Not initialised in this process (the trigger runner): a NoStatsLogger would drop all.
    if backend_module is not None and getattr(backend_module, "_factory", True) is None:
        _initialise(sdk_stats)
    return sdk_stats.Stats


def stats_backend() -> Any:
    """The logger object behind `stats()` (Airflow's `SafeStatsdLogger` when `[metrics]`
    says StatsD), built now if this process has not used Stats yet."""
    facade = stats()
    module = sys.modules.get(getattr(facade.incr, "__module__", ""))
    get_backend = getattr(module, "_get_backend", None)
    if callable(get_backend):  # 3.2+: module-level state
        return get_backend()
    getattr(facade, "incr")  # noqa: B009 - 3.0, 3.1: the metaclass builds its instance on use
    return getattr(facade, "instance", None)


def _initialise(sdk_stats: Any) -> None:
    from airflow.sdk.observability.metrics import stats_utils

    # Told apart by signature, not by a TypeError, which initialize() itself could raise.
    if "export_legacy_names" in inspect.signature(sdk_stats.initialize).parameters:
        sdk_stats.initialize(
            factory=stats_utils.get_stats_factory(),
            export_legacy_names=conf.getboolean("metrics", "legacy_names_on", fallback=True),
        )
    else:  # 3.2: the factory takes the Stats class, no legacy names
        sdk_stats.initialize(factory=stats_utils.get_stats_factory(sdk_stats.Stats))  # type: ignore[call-arg]


# --- the api-server's side: the Spark UI plugin (plugins/spark_ui.py) -------------------


def airflow_plugin_class() -> Any:
    """Airflow's AirflowPlugin base class (the same module on 3.0-3.3)."""
    from airflow.plugins_manager import AirflowPlugin

    return AirflowPlugin


def dag_reader_dependency() -> Any:
    """A FastAPI dependency that lets a request through only if Airflow's auth manager
    allows its user (the api-server's JWT: `Authorization: Bearer` or the `_token` cookie)
    to read the task instances of the path's `dag_id`: 401 without a user, 403 otherwise.
    Airflow's own public routes use this same check (`requires_access_dag`)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return requires_access_dag(method="GET", access_entity=DagAccessEntity.TASK_INSTANCE)


def task_instance_xcom(dag_id: str, run_id: str, task_id: str, map_index: int, key: str) -> Any:
    """One XCom value of a task instance, read from the metadata DB (the api-server has no
    task context); None when there is none."""
    import json

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    query = (
        select(XComModel.value)
        .where(
            XComModel.dag_id == dag_id,
            XComModel.run_id == run_id,
            XComModel.task_id == task_id,
            XComModel.map_index == map_index,
            XComModel.key == key,
        )
        .limit(1)
    )
    with create_session() as session:
        value = session.scalar(query)
    # The execution API stores the task's JSON text; older rows may hold the value itself.
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def task_definition(
    dag_id: str, run_id: str, task_id: str, map_index: int, fields: tuple[str, ...]
) -> tuple[dict[str, Any], frozenset[str]] | None:
    """What Airflow's serialized DAG says of a task, for the version the task instance ran
    (else its run's): `fields` as the definition holds them (template fields unrendered),
    with `task_type`, `_task_module` and `_is_mapped`, and which `fields` a mapped task
    expands (all of them when it expands a list of dicts). None: no such DAG version or task.
    Read from the serialized JSON (its shape on 3.3; not checked on 3.0-3.2), so the whole
    DAG is not deserialized for one task."""
    from airflow.models.dagrun import DagRun
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.models.taskinstance import TaskInstance
    from airflow.serialization.serialized_objects import BaseSerialization
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        version_id = session.scalar(
            select(TaskInstance.dag_version_id).where(
                TaskInstance.dag_id == dag_id,
                TaskInstance.run_id == run_id,
                TaskInstance.task_id == task_id,
                TaskInstance.map_index == map_index,
            )
        ) or session.scalar(
            select(DagRun.created_dag_version_id).where(
                DagRun.dag_id == dag_id, DagRun.run_id == run_id
            )
        )
        if version_id is None:
            return None
        serialized = session.scalar(
            select(SerializedDagModel).where(SerializedDagModel.dag_version_id == version_id)
        )
        data = serialized.data if serialized is not None else None
    tasks = ((data or {}).get("dag") or {}).get("tasks") or []
    encoded = next(
        (t.get("__var") for t in tasks if (t.get("__var") or {}).get("task_id") == task_id), None
    )
    if not isinstance(encoded, dict):
        return None
    values: dict[str, Any] = {
        key: encoded.get(key) for key in ("task_type", "_task_module", "_is_mapped")
    }
    if not encoded.get("_is_mapped"):
        values.update((name, encoded[name]) for name in fields if name in encoded)
        return values, frozenset()
    partial = encoded.get("partial_kwargs") or {}
    values.update(
        (name, BaseSerialization.deserialize(partial[name])) for name in fields if name in partial
    )
    expand = encoded.get("expand_input") or {}
    expanded_value = BaseSerialization.deserialize(expand.get("value"))
    if expand.get("type") == "dict-of-lists" and isinstance(expanded_value, dict):
        return values, frozenset(name for name in fields if name in expanded_value)
    return values, frozenset(fields)  # expand_kwargs: any field may differ per map index


def rendered_task_fields(dag_id: str, run_id: str, task_id: str, map_index: int) -> Any:
    """The template fields as the task instance rendered them (Airflow's rendered fields,
    which the task writes through the execution API); None before it rendered any."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.utils.session import create_session
    from sqlalchemy import select

    query = select(RenderedTaskInstanceFields.rendered_fields).where(
        RenderedTaskInstanceFields.dag_id == dag_id,
        RenderedTaskInstanceFields.run_id == run_id,
        RenderedTaskInstanceFields.task_id == task_id,
        RenderedTaskInstanceFields.map_index == map_index,
    )
    with create_session() as session:
        return session.scalar(query)
