"""A DAG with no provider code: one task that defers into the triggerer and resumes.

It proves the stack itself (scheduler -> LocalExecutor -> triggerer -> worker) before
and independently of the provider's own operator.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.providers.standard.triggers.temporal import TimeDeltaTrigger
from airflow.sdk import DAG, BaseOperator


class DeferOnceOperator(BaseOperator):
    def execute(self, context: Any) -> None:
        self.log.info("probe: deferring")
        self.defer(trigger=TimeDeltaTrigger(datetime.timedelta(seconds=2)), method_name="resume")

    def resume(self, context: Any, event: Any = None) -> dict[str, Any]:
        self.log.info("probe: resumed after deferral")
        return {"answer": 42}


with DAG("probe_deferral", schedule=None, catchup=False, start_date=datetime.datetime(2024, 1, 1)):
    DeferOnceOperator(task_id="defer_once")
