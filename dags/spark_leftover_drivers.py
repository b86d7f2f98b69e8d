"""Maintenance: delete Spark drivers whose task instance ended without cleaning up.

A worker killed hard, or a task marked failed while its worker was gone, can leave a driver
running after its task instance has ended; nothing adopts it again. Every hour this DAG
finds the live drivers SparkK8sSubmitOperator submitted whose task instance has finished (or
was deleted with its DAG run) and deletes them; owner references take their Service and
ConfigMaps along. Drivers of task instances that are still running, deferred or up for retry
stay. Unpause the DAG to turn it on; `list_only=True` only lists them in the task log.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.driver_cleanup import SparkK8sDriverCleanupOperator

with DAG(
    dag_id="spark_leftover_drivers",
    schedule=timedelta(hours=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["spark", "maintenance"],
):
    SparkK8sDriverCleanupOperator(task_id="delete_leftover_drivers")
