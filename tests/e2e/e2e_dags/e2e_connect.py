"""A Spark Connect server as the DAG's resource (docs/connect.md): setup, two PySpark client
tasks through pyspark-client, teardown, in a namespace of its own (so "nothing left" is
checked whole). The token is the password of the `e2e_connect_token` connection the test
creates; the worker reaches the server by the pod's address (it is outside cluster DNS).
`e2e_connect_killed`: the server's pod is killed after setup (deleted at once, as a node
loss would), so the client task after it fails with the reason, and the teardown still runs
and leaves nothing."""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_sparkk8s.operators.connect_server import SparkK8sConnectServerOperator

CONNECT_NAMESPACE = "airflow-e2e-connect"  # testenv/airflow_stack.py names it too

START = datetime.datetime(2024, 1, 1)
SERVER: dict[str, Any] = {
    "namespace": CONNECT_NAMESPACE,
    "image": "sparkk8s/spark:4.2.1",
    "token_conn_id": "e2e_connect_token",
    "address": "pod_ip",
    "idle_timeout": 600,
    "max_lifetime": 1200,
    "startup_timeout": 300,
}
DRIVER_CONF = {
    "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    # The real node has the machine's 2 CPUs: Spark's default request (1 per pod) would leave
    # the executor Pending beside another test's pods.
    "spark.kubernetes.driver.request.cores": "200m",
    "spark.kubernetes.executor.request.cores": "200m",
}

with DAG("e2e_connect", schedule=None, catchup=False, start_date=START):
    server = SparkK8sConnectServerOperator(
        task_id="connect_server",
        conf={**DRIVER_CONF, "spark.executor.instances": "1"},
        **SERVER,
    )

    @task
    def count_range(published: Any) -> int:
        from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session

        spark = remote_session(published)
        try:
            return int(spark.range(10**6).count())
        finally:
            spark.stop()

    @task
    def small_join(published: Any) -> list[list[Any]]:
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


with DAG("e2e_connect_killed", schedule=None, catchup=False, start_date=START):
    doomed = SparkK8sConnectServerOperator(
        task_id="connect_server",
        # No executor: this server only has to start and be killed.
        conf={
            **DRIVER_CONF,
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "0",
            "spark.dynamicAllocation.initialExecutors": "0",
        },
        **SERVER,
    )

    @task
    def kill_server(published: Any) -> None:
        from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
        from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods

        pods = DriverPods(SparkK8sHook().get_client())
        pods.delete(published["namespace"], published["driver_pod"], grace_period_seconds=0)
        assert not pods.wait_gone(published["namespace"], [published["driver_pod"]], 60)

    @task
    def client_after_the_kill(published: Any) -> int:
        from airflow_provider_sparkk8s.hooks.spark_connect_client import remote_session

        spark = remote_session(published)  # fails: the server is gone
        return int(spark.range(3).count())

    cleanup = SparkK8sConnectServerOperator(
        task_id="connect_teardown",
        mode="teardown",
        namespace=CONNECT_NAMESPACE,
        server_task_id="connect_server",
    )
    killed = kill_server(doomed.output)
    doomed >> killed >> client_after_the_kill(doomed.output) >> cleanup.as_teardown(setups=doomed)
