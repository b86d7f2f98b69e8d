"""A PySpark job whose driver pod comes from a template (labels, a toleration, a volume and
a side-car), given as a dict; a file path works the same way."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

DRIVER_TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"labels": {"team": "analytics"}, "annotations": {"owner": "data-eng"}},
    "spec": {
        "tolerations": [{"key": "spark", "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "containers": [
            {
                "name": "spark-kubernetes-driver",
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
            },
            {"name": "log-shipper", "image": "busybox:1.36", "command": ["sleep", "infinity"]},
        ],
    },
}

with DAG(
    dag_id="pyspark_pod_template",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["spark", "example"],
) as dag:
    SparkK8sSubmitOperator(
        task_id="pi_py",
        image="apache/spark-py:4.0.1",
        spark_version="4.0.1",
        application="local:///opt/spark/examples/src/main/python/pi.py",
        application_args=["50"],
        driver_pod_template=DRIVER_TEMPLATE,
        conf={"spark.kubernetes.driver.podTemplateContainerName": "spark-kubernetes-driver"},
        deferrable=True,
    )
