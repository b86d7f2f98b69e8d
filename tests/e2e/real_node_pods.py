"""What the e2e DAGs' applications share to run on the real node (the real kubelet,
containerd and runc: testenv/realnode): the Airflow stack's connection to its plane, and
pods small enough for its 2 CPUs. A module apart from the DAG files, so each DAG file can
import it without defining another's DAGs."""

from __future__ import annotations

REAL_NODE = "spark_k8s_real"  # testenv/airflow_stack.py's E2E_REAL_CONN
# Spark asks for one core a pod by default: the driver and two executors would not fit.
SMALL_PODS = {
    "spark.kubernetes.driver.request.cores": "250m",
    "spark.kubernetes.executor.request.cores": "250m",
}
