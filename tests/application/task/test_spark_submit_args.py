"""SparkSubmitOperator-style parameters written as the spark-submit command they mean."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.task.spark_submit_args import (
    SubmitParameters,
    comma_list,
    spark_submit_argv,
)
from airflow_provider_sparkk8s.errors import SparkConfError


def test_a_jvm_job_gives_the_flags_spark_submit_operator_would_pass():
    argv = spark_submit_argv(
        SubmitParameters(
            application="local:///opt/spark/examples/jars/spark-examples.jar",
            java_class="org.apache.spark.examples.SparkPi",
            conf={"spark.executor.instances": 2, "spark.dynamicAllocation.enabled": False},
            driver_memory="1g",
            executor_cores=2,
            name="spark-pi",
            jars=["a.jar", "b.jar"],
            application_args=[100, "x"],
            env_vars={"MODE": "fast"},
            verbose=True,
        )
    )
    assert argv == [
        "--deploy-mode", "cluster",
        "--conf", "spark.executor.instances=2",
        "--conf", "spark.dynamicAllocation.enabled=false",
        "--conf", "spark.kubernetes.driverEnv.MODE=fast",
        "--jars", "a.jar,b.jar",
        "--executor-cores", "2",
        "--driver-memory", "1g",
        "--name", "spark-pi",
        "--class", "org.apache.spark.examples.SparkPi",
        "--verbose",
        "local:///opt/spark/examples/jars/spark-examples.jar",
        "100", "x",
    ]  # fmt: skip


def test_comma_lists_accept_strings_and_lists():
    assert comma_list("a.py,b.py") == "a.py,b.py"
    assert comma_list(["a.py", " ", "b.py"]) == "a.py,b.py"
    assert comma_list([]) is None
    assert comma_list("  ") is None


def test_client_mode_is_refused_before_anything_is_sent():
    with pytest.raises(SparkConfError) as error:
        spark_submit_argv(SubmitParameters(application="x.py", deploy_mode="client"))
    assert error.value.key == "deploy_mode"


def test_a_missing_application_is_refused():
    with pytest.raises(SparkConfError) as error:
        spark_submit_argv(SubmitParameters(application=""))
    assert error.value.key == "application"


def test_nested_conf_values_are_refused_with_the_key_named():
    with pytest.raises(SparkConfError) as error:
        spark_submit_argv(SubmitParameters(application="x.py", conf={"spark.a": {"b": 1}}))
    assert "spark.a" in error.value.key
