"""Every Airflow import that differs across Airflow versions, in one place.

The rest of the provider imports Airflow only through this module, so it reads as if one
Airflow version existed; supporting another version means changing this file alone.
`tests/test_layering.py` keeps it that way.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import (
    BaseHook,
    BaseOperator,
    BaseOperatorLink,
    BaseSensorOperator,
    PokeReturnValue,
)
from airflow.triggers.base import BaseTrigger, TriggerEvent

try:
    from airflow.sdk.exceptions import (
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )
except ImportError:  # Airflow 3.0
    from airflow.exceptions import (  # type: ignore[no-redef]
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey as TaskInstanceKey

try:
    from airflow.sdk.configuration import conf
except ImportError:  # Airflow 3.0
    from airflow.configuration import conf  # type: ignore[no-redef]

__all__ = [
    "AirflowFailException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "BaseHook",
    "BaseOperator",
    "BaseOperatorLink",
    "BaseSensorOperator",
    "BaseTrigger",
    "PokeReturnValue",
    "TriggerEvent",
    "conf",
    "mask_secret",
    "object_storage_fs",
    "openlineage_conf",
    "openlineage_spark",
    "time_delta_trigger",
    "xcom_value",
]


def mask_secret(value: str) -> None:
    """Register `value` with Airflow's log masker (a no-op where there is none)."""
    try:
        from airflow.sdk.log import mask_secret as mask
    except ImportError:
        return
    mask(value)


def xcom_value(ti_key: Any, key: str) -> Any:
    """An XCom value of the task instance `ti_key` (what an operator link reads)."""
    from airflow.sdk.execution_time.xcom import XCom

    return XCom.get_value(ti_key=ti_key, key=key)


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


def openlineage_spark() -> Any | None:
    """The openlineage provider's Spark helpers (they load its listener), or None."""
    try:
        from airflow.providers.openlineage.utils import spark as openlineage_spark_helpers
    except ImportError:
        return None
    return openlineage_spark_helpers
