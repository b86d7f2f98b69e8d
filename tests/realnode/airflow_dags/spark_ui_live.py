"""The DAG of tests/realnode/test_spark_ui_airflow.py: Spark Pi on the real node, its UI
through Airflow. Its executors ask for a node label (RELEASE_LABEL) the node lacks, so the
driver waits, its UI up and its job listed, until the test labels the node."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

DAG_ID = "spark_ui_live"
TASK_ID = "pi"
APP_NAME = "pi-through-airflow"
RELEASE_LABEL = "sparkk8s.test/ui-release"

with DAG(DAG_ID, schedule=None, catchup=False, start_date=datetime.datetime(2026, 1, 1)):
    SparkK8sSubmitOperator(
        task_id=TASK_ID,
        image="sparkk8s/spark:4.3.0",
        spark_version="4.3.0",
        application="local:///opt/sparkk8s/examples/pi.py",
        application_args=["2", "1000"],
        name=APP_NAME,
        driver_memory="512m",
        executor_memory="512m",
        num_executors=1,
        conf={
            "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
            "spark.kubernetes.driver.request.cores": "200m",
            "spark.kubernetes.executor.request.cores": "200m",
            f"spark.kubernetes.executor.node.selector.{RELEASE_LABEL}": "go",
        },
        deferrable=True,
        poll_interval=1.0,
        startup_timeout=300,
        run_timeout=900,
    )
