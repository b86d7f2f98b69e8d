"""Real Spark applications for the end-to-end tests: the example `dags/spark_pi.py`'s task
with the real node's connection, a failing program, one the test kills while deferred, and
one that loses an executor. They run on the real node (the real kubelet, containerd and runc;
connection `spark_k8s_real`, tests/e2e/conftest.py) as the documented `spark` driver account
(docs/rbac.yaml), each pod asking for a quarter of a core: the node has the machine's 2 CPUs.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from tests.e2e.real_node_pods import REAL_NODE, SMALL_PODS

EXAMPLES = "local:///opt/sparkk8s/examples"
FAILURE_MESSAGE = "e2e failure on purpose"
KILL_NAMESPACE = "airflow-e2e-kill"  # its own namespace, so "nothing left" is checked whole
COMMON: dict[str, Any] = {
    "kubernetes_conn_id": REAL_NODE,
    "image": "sparkk8s/spark:4.3.0",
    "spark_version": "4.3.0",
    "driver_memory": "512m",
    "executor_memory": "512m",
    "num_executors": 2,
    "conf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "spark", **SMALL_PODS},
    "deferrable": True,
    "poll_interval": 1.0,
    "startup_timeout": 300,
}
START = datetime.datetime(2024, 1, 1)

with DAG("e2e_spark_pi", schedule=None, catchup=False, start_date=START):
    # dags/spark_pi.py's task as it stands, but for its connection (the example's is
    # spark_k8s_default, which the e2e stack does not make): tests/dags/test_e2e_spark_pi.py
    # compares them.
    SparkK8sSubmitOperator(
        task_id="spark_pi",
        kubernetes_conn_id=REAL_NODE,
        image="sparkk8s/spark:4.3.0",
        spark_version="4.3.0",
        application="local:///opt/sparkk8s/examples/pi.py",
        name="spark-pi",
        application_args=["4", "200000"],
        driver_memory="512m",
        executor_memory="512m",
        num_executors=2,
        conf={"spark.kubernetes.authenticate.driver.serviceAccountName": "spark", **SMALL_PODS},
        deferrable=True,
        startup_timeout=300,
        run_timeout=1800,
        on_finish_action="delete_succeeded_pod",
    )

with DAG("e2e_spark_failure", schedule=None, catchup=False, start_date=START):
    SparkK8sSubmitOperator(
        task_id="spark_fails",
        application=f"{EXAMPLES}/fail.py",
        application_args=[FAILURE_MESSAGE],
        **COMMON,
    )

with DAG("e2e_spark_kill", schedule=None, catchup=False, start_date=START):
    # Long enough to be killed while its executors work: each partition held 300 s asleep.
    SparkK8sSubmitOperator(
        task_id="spark_killed",
        namespace=KILL_NAMESPACE,
        application=f"{EXAMPLES}/pi.py",
        application_args=["4", "1000", "300"],
        **COMMON,
    )

with DAG("e2e_spark_lost_executor", schedule=None, catchup=False, start_date=START):
    # Long enough that an executor can be lost mid-job and replaced: six partitions held
    # 6 s each on two executors, so the loss lands while they work, however slow the
    # machine (6,000,000 samples once left a second or two).
    SparkK8sSubmitOperator(
        task_id="spark_loses_an_executor",
        application=f"{EXAMPLES}/pi.py",
        application_args=["6", "1000", "6"],
        **COMMON,
    )
