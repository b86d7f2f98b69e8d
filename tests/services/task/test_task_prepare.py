"""The task run's first phase (services/task/task_prepare.py): the operator's parameters as one
task instance's submission, the Spark line chosen once, the conf amended in one place."""

from __future__ import annotations

import logging
from typing import Any

from airflow_provider_sparkk8s.application.task.memory_retry import DriverMemory
from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui.event_log import EventLogChoice
from airflow_provider_sparkk8s.services.task.task_prepare import (
    ConfAdditions,
    RunRequest,
    amended_conf,
    dry_run,
    prepare,
)

LOG = logging.getLogger("sparkk8s.test.task_prepare")
REF = TaskInstanceRef("etl", "spark_pi", "manual__1")


def request(**given: Any) -> RunRequest:
    parameters = SubmitParameters(
        application="local:///opt/spark/examples/jars/spark-examples.jar",
        java_class="org.apache.spark.examples.SparkPi",
        name="spark_pi",
    )
    fields: dict[str, Any] = {
        "parameters": parameters,
        "master": "k8s://https://127.0.0.1:6443",
        "namespace": "team-a",
        "cwd": "/",
        "environ": {},
        "image": "apache/spark:3.5.1",
    }
    fields.update(given)
    return RunRequest(**fields)


def test_the_spark_line_is_chosen_once_and_carried(caplog):
    caplog.set_level(logging.INFO, LOG.name)
    task = prepare(request(), REF, LOG)
    assert task.spark_version == "3.5.1" and task.kubernetes.spark_version == "3.5.1"
    assert [r.getMessage() for r in caplog.records] == [
        "The objects follow Spark 3.5.1 (from the image tag of apache/spark:3.5.1)"
    ]
    chosen = prepare(request(image="my/spark:latest", spark_version="4.0.1"), REF, LOG)
    assert chosen.spark_version == "4.0.1"


def test_the_operators_additions_come_in_one_place_and_the_authors_keys_win():
    additions = ConfAdditions(EventLogChoice("s3a://logs/events"), "/sparkk8s/ui/etl")
    given = SubmitParameters(conf={"spark.eventLog.dir": "/mine"})
    conf = amended_conf(request(parameters=given, additions=additions))
    assert conf == {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "/mine",
        "spark.ui.proxyBase": "/sparkk8s/ui/etl",
    }
    assert amended_conf(request(parameters=given)) == {"spark.eventLog.dir": "/mine"}


def test_the_memory_retrys_sizes_reach_the_parsed_conf():
    task = prepare(request(), REF, LOG, DriverMemory(1536, 576))
    assert task.arguments.spark_conf["spark.driver.memory"] == "1536m"
    assert task.arguments.spark_conf["spark.driver.memoryOverhead"] == "576m"


def test_a_dry_run_sends_nothing_and_says_what_it_built(caplog):
    caplog.set_level(logging.INFO, LOG.name)
    built = dry_run(request(), REF, LOG)
    assert built["dry_run"] is True and built["spark_version"] == "3.5.1"
    assert built["namespace"] == "team-a" and "Pod/" + built["driver_pod"] in built["objects"]
    assert "nothing sent" in caplog.text


def test_the_environment_is_never_shown_by_the_requests_that_carry_it():
    """The worker's environment holds connections (AIRFLOW_CONN_*) and tokens; a traceback's
    locals show these requests, so their repr leaves it out."""
    secret = "AIRFLOW_CONN_X=spark_k8s://:t0ken-value@"
    environ = {"AIRFLOW_CONN_X": secret, "SPARK_USER": "alice"}
    run = request(environ=environ)
    task = prepare(run, REF, LOG)
    assert task.environ == environ
    for shown in (repr(run), repr(task)):
        assert "t0ken-value" not in shown and "environ" not in shown
