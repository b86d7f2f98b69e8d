"""Worker-free Spark tasks (`start_from_trigger=True`, issue 47) for
tests/e2e/test_worker_free_end_to_end.py: the scheduler defers each straight to the
triggerer, which renders, submits, follows and ends it; no worker runs. The example's pi
(succeeds), an application error (no retries: it ends in the triggerer), a long
application the test kills by marking the task failed, and a worker-free sensor that finds
and follows the application a worker-free operator task beside it submits. On the real node.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from tests.e2e.real_node_pods import REAL_NODE, SMALL_PODS

EXAMPLES = "local:///opt/sparkk8s/examples"
FAILURE_MESSAGE = "e2e worker-free: failing on purpose"
COMMON: dict[str, Any] = {
    "kubernetes_conn_id": REAL_NODE,
    "image": "sparkk8s/spark:4.3.0",
    "driver_memory": "512m",
    "executor_memory": "512m",
    "num_executors": 1,
    "conf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "spark", **SMALL_PODS},
    "start_from_trigger": True,
    "poll_interval": 1.0,
    "startup_timeout": 300,
    "retries": 0,
}
START = datetime.datetime(2024, 1, 1)

with DAG("e2e_worker_free_pi", schedule=None, catchup=False, start_date=START):
    SparkK8sSubmitOperator(
        task_id="spark_pi",
        application=f"{EXAMPLES}/pi.py",
        # Rendered in the triggerer with the task's context.
        application_args=["{{ 2 + 2 }}", "1000"],
        **COMMON,
    )

with DAG("e2e_worker_free_error", schedule=None, catchup=False, start_date=START):
    SparkK8sSubmitOperator(
        task_id="raises",
        application=f"{EXAMPLES}/fail.py",
        application_args=[FAILURE_MESSAGE],
        **COMMON,
    )

with DAG("e2e_worker_free_kill", schedule=None, catchup=False, start_date=START):
    # An hour asleep per partition: only the user's kill ends it.
    SparkK8sSubmitOperator(
        task_id="killed",
        application=f"{EXAMPLES}/pi.py",
        application_args=["4", "1000", "3600"],
        **COMMON,
    )

with DAG("e2e_worker_free_sensor", schedule=None, catchup=False, start_date=START):
    # Two partitions asleep 8 s each: the sensor finds the driver running, and follows it.
    # The driver is kept: a sensor that looked first after the end still finds it (the test
    # deletes it), so the order of the two triggers cannot decide the run.
    SparkK8sSubmitOperator(
        task_id="submits",
        application=f"{EXAMPLES}/pi.py",
        application_args=["2", "1000", "8"],
        on_finish_action="keep_pod",
        **COMMON,
    )
    # Beside it, not after it: it waits for the driver, then follows it to its end.
    SparkK8sApplicationSensor(
        task_id="follows",
        kubernetes_conn_id=REAL_NODE,
        # Rendered in the triggerer with the task's context.
        label_selector="sparkk8s.io/dag-id={{ dag_run.dag_id }}",
        start_from_trigger=True,
        poke_interval=2,
        timeout=300,
        retries=0,
    )

with DAG("e2e_worker_free_sensor_timeout", schedule=None, catchup=False, start_date=START):
    # Nothing carries this label: each sensor looks every 2 s until its 20 s are up, and the
    # trigger ends it there, skipped with soft_fail, else failed (no retries: no worker).
    for task_id, soft_fail in (("skips", True), ("fails", False)):
        SparkK8sApplicationSensor(
            task_id=task_id,
            kubernetes_conn_id=REAL_NODE,
            label_selector="sparkk8s.io/dag-id=nothing-{{ dag_run.dag_id }}",
            start_from_trigger=True,
            poke_interval=2,
            timeout=20,
            soft_fail=soft_fail,
            retries=0,
        )
