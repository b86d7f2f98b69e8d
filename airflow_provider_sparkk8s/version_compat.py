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

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey as TaskInstanceKey

try:
    from airflow.sdk.configuration import conf
except ImportError:  # Airflow 3.0
    from airflow.configuration import conf  # type: ignore[no-redef]

__all__ = [
    "BaseHook",
    "BaseOperator",
    "BaseOperatorLink",
    "BaseSensorOperator",
    "BaseTrigger",
    "PokeReturnValue",
    "TriggerEvent",
    "conf",
    "mask_secret",
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
