"""A try that fails after its application succeeded, as Airflow's stale executor event after
a deferral fails one (apache/airflow#67287, #72716): the first try raises once
`execute_complete` has the result. With one retry, the second try must deliver that result
without running the application again (tests/failover/test_triggerer_failover.py)."""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator


class LosesTheFirstResult(SparkK8sSubmitOperator):
    def execute_complete(self, context: Any, *args: Any, **kwargs: Any) -> Any:
        returned = super().execute_complete(context, *args, **kwargs)
        if context["ti"].try_number == 1:
            raise RuntimeError("the first try's result is lost after its application succeeded")
        return returned


with DAG("e2e_delivery", schedule=None, catchup=False, start_date=datetime.datetime(2024, 1, 1)):
    LosesTheFirstResult(
        task_id="deliver",
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        image="apache/spark:4.0.0",
        deferrable=True,
        poll_interval=1.0,
        retries=1,
        retry_delay=datetime.timedelta(seconds=1),
    )
