"""Waiting for a Spark application that something else submitted (another DAG, a CI job,
spark-submit), by its application id given in the run's conf."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor

with DAG(
    dag_id="spark_application_sensor",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["spark", "example"],
    params={"application_id": "spark-00000000000000000000000000000000"},
) as dag:
    SparkK8sApplicationSensor(
        task_id="wait_for_application",
        application_id="{{ params.application_id }}",
        deferrable=True,
        timeout=3600,
    )
