"""PySpark Pi: the main example, and what `make demo` runs on real Spark.

The task submits the application, defers to the triggerer while it runs (streaming the
driver's log into the task log), and pushes the application id, driver pod, final state,
exit code, duration and executor summary to XCom.

The image: `make demo` and the tests run `sparkk8s/spark:4.3.0`, an OCI image of Spark 4.3.0
laid out from pyspark's distribution as the apache/spark images are (testenv/realnode/image.py),
which holds this Monte Carlo Pi program at /opt/sparkk8s/examples/pi.py (source:
testenv/image/examples/pi.py). On a cluster, use a Spark
4.3 image with Python that holds the program, and a driver service account with the
`spark-driver` Role of docs/rbac.yaml.
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
    params={"partitions": 4, "samples_per_partition": 200_000},
) as dag:
    SparkK8sSubmitOperator(
        task_id="spark_pi",
        kubernetes_conn_id="spark_k8s_default",
        image="sparkk8s/spark:4.3.0",
        spark_version="4.3.0",
        application="local:///opt/sparkk8s/examples/pi.py",
        name="spark-pi",
        application_args=["{{ params.partitions }}", "{{ params.samples_per_partition }}"],
        driver_memory="512m",
        executor_memory="512m",
        num_executors=2,
        conf={
            "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
            # A quarter of a core each (Spark asks for a whole one a pod): `make demo`'s node
            # has this machine's 2 CPUs, and the driver and two executors must fit on it.
            "spark.kubernetes.driver.request.cores": "250m",
            "spark.kubernetes.executor.request.cores": "250m",
        },
        deferrable=True,
        startup_timeout=300,
        run_timeout=1800,
        on_finish_action="delete_succeeded_pod",
    )
