"""Timeouts on real Spark, for tests/e2e/test_execution_timeouts.py: applications that run
far longer than their task's `execution_timeout` (deferred, and in the worker with uploads),
and the sensor, poking and deferred, on an application submitted elsewhere. Each DAG has
no retries, so the test sees one try end by its timeout. They run on the real node, at the
same time (the test starts all four at once: each mostly waits for its timeout), each in a
namespace of its own, so "nothing left" is checked whole per DAG.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from tests.e2e.real_node_pods import REAL_NODE, SMALL_PODS

EXAMPLES = "local:///opt/sparkk8s/examples"
NAMESPACE_OF = {
    "e2e_timeout_deferred": "airflow-e2e-timeout-deferred",
    "e2e_timeout_worker_uploads": "airflow-e2e-timeout-worker",
    "e2e_timeout_poking_sensor": "airflow-e2e-timeout-poking",
    "e2e_timeout_deferred_sensor": "airflow-e2e-timeout-sensor",
}
# An hour for two executors, holding each partition asleep (pi.py's third argument), not
# computing: the timeouts below end it long before. (It was 1,200 partitions of 3,000,000
# samples: four such applications at once kept eight Python workers busy on 2 cores.)
LONG_PI = ["4", "1000", "3600"]
# The tasks whose tests check that their executors ran (and went) wait long enough for them:
# two drivers start at once on a busy 2-core machine, beside the sensors' two applications.
# A cold JVM once took 100 s to ask for executors, while four applications computed. The
# run's timings print when both of each task's executors ran: 56.9 s (deferred) and 61.7 s
# (in the worker) after the run started, the four runs alone on this machine (2026-12-07).
# 65 s and 75 s were tried: too close. The deferred task waits longer than the worker's.
WORKER_EXECUTION_TIMEOUT = datetime.timedelta(seconds=100)
DEFERRED_EXECUTION_TIMEOUT = datetime.timedelta(seconds=120)
# The sensors' application runs before they start: nothing to wait for but the timeout.
SENSOR_EXECUTION_TIMEOUT = datetime.timedelta(seconds=50)
# Uploads go where the driver reads them at the same path: a hostPath volume of the real
# node (its containers see the host's /tmp), mounted at that path in the driver's container.
# Not under the home folder: /root is 0700 in the image, and the driver runs as user 185.
UPLOAD_DIR = Path("/tmp/sparkk8s-test-uploads/e2e-timeouts")
UPLOAD_VOLUME = {
    "spark.kubernetes.file.upload.path": f"file://{UPLOAD_DIR}",
    "spark.kubernetes.driver.volumes.hostPath.uploads.mount.path": str(UPLOAD_DIR),
    "spark.kubernetes.driver.volumes.hostPath.uploads.mount.readOnly": "true",
    "spark.kubernetes.driver.volumes.hostPath.uploads.options.path": str(UPLOAD_DIR),
}
COMMON: dict[str, Any] = {
    "kubernetes_conn_id": REAL_NODE,
    "image": "sparkk8s/spark:4.3.0",
    "spark_version": "4.3.0",
    "driver_memory": "512m",
    "executor_memory": "512m",
    "num_executors": 2,
    "conf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "spark", **SMALL_PODS},
    "poll_interval": 1.0,
    "startup_timeout": 300,  # execution_timeout shadows it: the task log warns
    "retries": 0,
}
START = datetime.datetime(2024, 1, 1)

with DAG("e2e_timeout_deferred", schedule=None, catchup=False, start_date=START):
    SparkK8sSubmitOperator(
        task_id="spark_deferred",
        namespace=NAMESPACE_OF["e2e_timeout_deferred"],
        application=f"{EXAMPLES}/pi.py",
        application_args=LONG_PI,
        deferrable=True,
        execution_timeout=DEFERRED_EXECUTION_TIMEOUT,
        **COMMON,
    )

with DAG("e2e_timeout_worker_uploads", schedule=None, catchup=False, start_date=START):
    SparkK8sSubmitOperator(
        task_id="spark_in_worker",
        application=f"{EXAMPLES}/pi.py",
        application_args=LONG_PI,
        files=["e2e_timeout_input.txt"],  # next to this file: uploaded to UPLOAD_DIR
        deferrable=False,
        namespace=NAMESPACE_OF["e2e_timeout_worker_uploads"],
        execution_timeout=WORKER_EXECUTION_TIMEOUT,
        **{
            **COMMON,
            "conf": {**COMMON["conf"], **UPLOAD_VOLUME},
        },
    )

# The sensors follow a driver the test submits with sparkk8s-submit (dag_run.conf names it).
SENSOR: dict[str, Any] = {
    "kubernetes_conn_id": REAL_NODE,
    "driver_pod_name": "{{ dag_run.conf['driver_pod'] }}",
    "delete_on_timeout": True,
    "execution_timeout": SENSOR_EXECUTION_TIMEOUT,
    "poke_interval": 5,
    "retries": 0,
}

with DAG("e2e_timeout_poking_sensor", schedule=None, catchup=False, start_date=START):
    SparkK8sApplicationSensor(
        task_id="sensor_poking",
        mode="poke",
        deferrable=False,
        namespace=NAMESPACE_OF["e2e_timeout_poking_sensor"],
        **SENSOR,
    )

with DAG("e2e_timeout_deferred_sensor", schedule=None, catchup=False, start_date=START):
    SparkK8sApplicationSensor(
        task_id="sensor_deferred",
        deferrable=True,
        namespace=NAMESPACE_OF["e2e_timeout_deferred_sensor"],
        **SENSOR,
    )
