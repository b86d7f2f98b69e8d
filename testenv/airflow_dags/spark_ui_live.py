"""The DAG of testenv/spark_ui_live.py (tests/e2e/test_spark_ui_airflow.py,
benchmarks/bench_spark_ui.py): Spark Pi on the real node, its UI through Airflow. Its
executors ask for a node label (RELEASE_LABEL) the node lacks, so the driver waits, its UI
up and its job listed, until the test labels the node.

The driver writes its event log (the operator's `event_log_dir`) into EVENTS_MOUNT, a
hostPath volume whose host folder the run's conf names (`events_host_path`): a History
Server on the host reads it after the end."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

DAG_ID = "spark_ui_live"
# Its own connection: in the e2e lane it runs in the shared Airflow stack beside other DAGs.
CONN_ID = "spark_ui_live"
TASK_ID = "pi"
APP_NAME = "pi-through-airflow"
RELEASE_LABEL = "sparkk8s.test/ui-release"
EVENTS_MOUNT = "/spark-events"  # the event log folder inside the driver pod
EVENTS_HOST_PATH_KEY = "events_host_path"  # the run conf's key: the volume's host folder
_EVENTS_VOLUME = "spark.kubernetes.driver.volumes.hostPath.events."

with DAG(DAG_ID, schedule=None, catchup=False, start_date=datetime.datetime(2026, 1, 1)):
    SparkK8sSubmitOperator(
        task_id=TASK_ID,
        kubernetes_conn_id=CONN_ID,
        image="sparkk8s/spark:4.3.0",
        spark_version="4.3.0",
        application="local:///opt/sparkk8s/examples/pi.py",
        application_args=["2", "1000"],
        name=APP_NAME,
        driver_memory="512m",
        executor_memory="512m",
        num_executors=1,
        conf={
            "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
            "spark.kubernetes.driver.request.cores": "200m",
            "spark.kubernetes.executor.request.cores": "200m",
            f"spark.kubernetes.executor.node.selector.{RELEASE_LABEL}": "go",
            # 4.x compresses the event log with zstd by default, whose JNI library needs
            # libpthread.so.0, which the real node's image lacks (seen: the driver's
            # SparkContext failed with UnsatisfiedLinkError): a plain log instead.
            "spark.eventLog.compress": "false",
            _EVENTS_VOLUME + "mount.path": EVENTS_MOUNT,
            _EVENTS_VOLUME + "options.path": "{{ dag_run.conf['" + EVENTS_HOST_PATH_KEY + "'] }}",
        },
        event_log_dir=f"file:{EVENTS_MOUNT}",
        deferrable=True,
        poll_interval=1.0,
        startup_timeout=300,
        run_timeout=900,
    )
