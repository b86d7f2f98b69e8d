"""A dry run: render and validate every object the submission would create and log them as
YAML (secrets redacted). Nothing is sent to the cluster; useful in CI and code review."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

with DAG(
    dag_id="spark_dry_run",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["spark", "example"],
) as dag:
    SparkK8sSubmitOperator(
        task_id="render_spark_pi",
        image="apache/spark:4.0.1",
        spark_version="4.0.1",
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        conf={"spark.executor.instances": "4", "spark.kubernetes.driver.label.team": "analytics"},
        dry_run=True,
    )
