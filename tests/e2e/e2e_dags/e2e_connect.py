"""A Spark Connect server as the DAG's resource (docs/connect.md): setup, two PySpark client
tasks through pyspark-client, teardown, in a namespace of its own (so "nothing left" is
checked whole). The token is the password of the `e2e_connect_token` connection the test
creates; the worker reaches the server by the pod's address (it is outside cluster DNS)."""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator

CONNECT_NAMESPACE = "airflow-e2e-connect"  # tests/e2e/airflow_stack.py names it too

with DAG("e2e_connect", schedule=None, catchup=False, start_date=datetime.datetime(2024, 1, 1)):
    server = SparkK8sConnectServerOperator(
        task_id="connect_server",
        namespace=CONNECT_NAMESPACE,
        image="sparkk8s/spark:4.2.1",
        conf={
            "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
            "spark.driver.memory": "512m",
            "spark.executor.memory": "512m",
            "spark.executor.instances": "1",
        },
        token_conn_id="e2e_connect_token",
        address="pod_ip",
        idle_timeout=600,
        max_lifetime=1200,
        startup_timeout=300,
    )

    @task
    def count_range(published: dict[str, Any]) -> int:
        from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session

        spark = remote_session(published)
        try:
            return int(spark.range(10**6).count())
        finally:
            spark.stop()

    @task
    def small_join(published: dict[str, Any]) -> list[list[Any]]:
        from pyspark.sql import functions

        from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session

        spark = remote_session(published)
        try:
            left = spark.range(100).withColumn("k", functions.col("id") % 10)
            right = spark.createDataFrame([(k, f"name-{k}") for k in range(10)], ["k", "name"])
            rows = left.join(right, "k").groupBy("name").count().orderBy("name").collect()
            return [[row["name"], row["count"]] for row in rows]
        finally:
            spark.stop()

    stop = SparkK8sConnectServerOperator(
        task_id="connect_teardown",
        mode="teardown",
        namespace=CONNECT_NAMESPACE,
        server_task_id="connect_server",
    )
    clients = [count_range(server.output), small_join(server.output)]
    server >> clients >> stop.as_teardown(setups=server)
