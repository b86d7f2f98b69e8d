"""SparkPi on the JVM: the main example, and what `make demo` runs.

The task submits the application, defers to the triggerer while it runs, and pushes the
application id, driver pod, final state, exit code, duration and executor summary to XCom.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

with DAG(
    dag_id="spark_pi",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["spark", "example"],
    params={"slices": 100},
) as dag:
    SparkK8sSubmitOperator(
        task_id="spark_pi",
        kubernetes_conn_id="spark_k8s_default",
        image="apache/spark:4.0.1",
        spark_version="4.0.1",
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        name="spark-pi",
        application_args=["{{ params.slices }}"],
        driver_memory="1g",
        executor_memory="1g",
        num_executors=2,
        conf={"spark.kubernetes.authenticate.driver.serviceAccountName": "default"},
        deferrable=True,
        startup_timeout=300,
        run_timeout=3600,
        on_finish_action="delete_succeeded_pod",
    )
