"""Real Spark applications that the clear tests clear while their driver runs (issue 29),
through the REST API as the UI's Clear button sends it: deferred (the old kill held until
the new try deferred, or run at once with the new try held by its pool), and waited on in
the worker (deferrable=False). Each DAG runs long enough to be cleared mid-run; its task
has no retries, so a failed re-run fails the DAG run. They run on the real node. `e2e_clear_placeholder` only holds a trigger
id while a test runs (see tests/e2e/test_clear_rerun.py)."""

from __future__ import annotations

import datetime
from typing import Any

from airflow.providers.standard.triggers.temporal import TimeDeltaTrigger
from airflow.sdk import DAG, BaseOperator

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from tests.e2e.clear_triggers import KILL_FIRST_POOL, HoldKillOperator, KillFirstOperator
from tests.e2e.real_node_pods import REAL_NODE, SMALL_PODS

EXAMPLES = "local:///opt/sparkk8s/examples"
COMMON: dict[str, Any] = {
    "kubernetes_conn_id": REAL_NODE,
    "image": "sparkk8s/spark:4.3.0",
    "spark_version": "4.3.0",
    "driver_memory": "512m",
    "executor_memory": "512m",
    "num_executors": 1,
    "conf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "spark", **SMALL_PODS},
    "poll_interval": 1.0,
    "startup_timeout": 300,
    "retries": 0,
    "application": f"{EXAMPLES}/pi.py",
    # Long enough to be cleared while the executor works, short enough to run twice: four
    # partitions on one executor, each held 15 s asleep (pi.py's third argument), about
    # 60 s with no CPU spent (64 partitions of 2,000,000 samples took about 40 CPU-s).
    "application_args": ["4", "1000", "15"],
}
START = datetime.datetime(2024, 1, 1)

# A fresh re-run (never cleared itself) holds nothing: CI time. The adopted application is
# try 1's, so e2e_clear_adopt keeps the one size.
SHORT_RERUN = {"application_args": ["4", "1000", "{{ 15 if ti.try_number == 1 else 0 }}"]}

for dag_id, operator, deferrable, extra in (
    # The old trigger's kill held until the new try has deferred (tests/e2e/clear_triggers.py).
    ("e2e_clear_deferred", HoldKillOperator, True, SHORT_RERUN),
    ("e2e_clear_adopt", HoldKillOperator, True, {}),  # cleared without resetting the run
    # The kill at once; the new try held back by its pool until it has run.
    ("e2e_clear_kill_first", KillFirstOperator, True, {"pool": KILL_FIRST_POOL, **SHORT_RERUN}),
    ("e2e_clear_worker_side", SparkK8sSubmitOperator, False, SHORT_RERUN),
):
    with DAG(dag_id, schedule=None, catchup=False, start_date=START):
        operator(task_id="spark_cleared", deferrable=deferrable, **{**COMMON, **extra})


class HoldTriggerIdOperator(BaseOperator):
    def execute(self, context: Any) -> None:
        self.defer(trigger=TimeDeltaTrigger(datetime.timedelta(minutes=30)), method_name="done")

    def done(self, context: Any, event: Any = None) -> None:
        return None


with DAG("e2e_clear_placeholder", schedule=None, catchup=False, start_date=START):
    HoldTriggerIdOperator(task_id="hold")
