"""Real Spark applications for the failure-kind tests (tests/e2e/test_failure_outcomes.py):
an application error with retries left, a driver someone else deletes while it runs, and a
driver its memory limit kills (on the real node: the kernel's OOM killer, in the container's
memory cgroup). Each deletes its drivers when done (on_finish_action), so the
test can check that nothing of it is left in the namespace.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.retry_policy import SparkK8sRetryPolicy
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from tests.e2e.real_node_pods import REAL_NODE, SMALL_PODS

EXAMPLES = "local:///opt/sparkk8s/examples"
FAILURE_MESSAGE = "e2e outcome: failing on purpose"
# More than the first try's driver container may hold (512m heap + 384m overhead = 896Mi),
# well within the raised one (1024m + 768m = 1792Mi) with the JVM beside it.
OOM_MEBIBYTES = 1000
COMMON: dict[str, Any] = {
    "kubernetes_conn_id": REAL_NODE,
    "image": "sparkk8s/spark:4.3.0",
    "spark_version": "4.3.0",
    "driver_memory": "512m",
    "executor_memory": "512m",
    "num_executors": 1,
    "conf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "spark", **SMALL_PODS},
    "deferrable": True,
    "poll_interval": 1.0,
    "startup_timeout": 300,
    "on_finish_action": "delete_pod",
    "retry_delay": datetime.timedelta(seconds=1),
}
START = datetime.datetime(2024, 1, 1)

with DAG("e2e_outcome_application_error", schedule=None, catchup=False, start_date=START):
    # No retry_policy: the operator's default (SparkK8sRetryPolicy) fails it on try 1.
    # --after-job runs a job on an executor first, so the trigger fires well after the
    # deferral: Airflow 3.3.2's scheduler retries a try whose trigger fired before it read
    # the executor's event for the deferral (apache/airflow#67287, #72716), whatever the
    # retry policy decides.
    SparkK8sSubmitOperator(
        task_id="raises",
        application=f"{EXAMPLES}/fail.py",
        application_args=[FAILURE_MESSAGE, "--after-job"],
        retries=3,
        **COMMON,
    )

with DAG("e2e_outcome_deleted_driver", schedule=None, catchup=False, start_date=START):
    # Long enough to be deleted while it works (each partition held 15 s asleep on try 1);
    # short on try 2.
    SparkK8sSubmitOperator(
        task_id="deleted",
        application=f"{EXAMPLES}/pi.py",
        application_args=["4", "1000", "{{ 15 if ti.try_number == 1 else 0 }}"],
        retries=2,
        retry_policy=SparkK8sRetryPolicy(infrastructure_delay=datetime.timedelta(seconds=2)),
        **COMMON,
    )

with DAG("e2e_outcome_out_of_memory", schedule=None, catchup=False, start_date=START):
    SparkK8sSubmitOperator(
        task_id="oom",
        application=f"{EXAMPLES}/oom.py",
        application_args=[str(OOM_MEBIBYTES)],
        retries=2,
        retry_policy=SparkK8sRetryPolicy(memory_factor=2.0),
        **COMMON,
    )
