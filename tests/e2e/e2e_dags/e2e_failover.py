"""Ten deferred Spark applications held Running by KWOK until the triggerer-failover test
releases them (every third exits 3): the work two triggerers share while one is killed."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

APPLICATIONS = 10

with DAG("e2e_failover", schedule=None, catchup=False, start_date=datetime.datetime(2024, 1, 1)):
    for index in range(APPLICATIONS):
        SparkK8sSubmitOperator(
            task_id=f"app_{index}",
            application="local:///opt/spark/examples/jars/spark-examples.jar",
            java_class="org.apache.spark.examples.SparkPi",
            image="apache/spark:4.0.0",
            deferrable=True,
            poll_interval=1.0,
            conf={
                "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
                "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/exit-code": (
                    "3" if index % 3 == 0 else "0"
                ),
            },
        )
