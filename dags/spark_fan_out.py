"""A dynamically mapped fan-out: one Spark application per partition, each its own task
instance (and so its own driver, found again by its map index after a worker restart)."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

with DAG(
    dag_id="spark_fan_out",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["spark", "example"],
) as dag:

    @task
    def partitions() -> list[list[str]]:
        return [["2026-01-01"], ["2026-01-02"], ["2026-01-03"]]

    @task
    def summary(results: list[dict]) -> dict[str, str]:
        return {r["application_id"]: r["state"] for r in results}

    jobs = SparkK8sSubmitOperator.partial(
        task_id="daily_aggregate",
        image="apache/spark:4.0.1",
        spark_version="4.0.1",
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        name="daily-aggregate",
        deferrable=True,
    ).expand(application_args=partitions())

    summary(jobs.output)  # type: ignore[arg-type]  # an XComArg resolves to the list at run time
