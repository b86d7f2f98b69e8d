"""A failing Spark application for the end-to-end tests (the succeeding one is the
example `dags/spark_pi.py`): its driver exits 1 with a message, chosen by the KWOK
annotations of the test control plane (docs/testing.md).
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

FAILURE_MESSAGE = "java.lang.IllegalStateException: e2e failure on purpose"
COMMON: dict[str, Any] = {
    "application": "local:///opt/spark/examples/jars/spark-examples.jar",
    "java_class": "org.apache.spark.examples.SparkPi",
    "application_args": ["10"],
    "image": "apache/spark:4.0.0",
    "deferrable": True,
    "poll_interval": 1.0,
}

with DAG(
    "e2e_spark_failure", schedule=None, catchup=False, start_date=datetime.datetime(2024, 1, 1)
):
    SparkK8sSubmitOperator(
        task_id="spark_fails",
        conf={
            "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/exit-code": "1",
            "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/message": FAILURE_MESSAGE,
        },
        **COMMON,
    )
