"""Every example DAG parses with no import errors, and has the tasks it promises."""

from __future__ import annotations

from pathlib import Path

import pytest

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"


@pytest.fixture(scope="module")
def dag_bag():
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.0
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

    return DagBag(dag_folder=str(DAGS_FOLDER))


def test_every_example_dag_imports_without_errors(dag_bag):
    assert dag_bag.import_errors == {}
    files = {Path(dag.fileloc).name for dag in dag_bag.dags.values()}
    assert files == {p.name for p in DAGS_FOLDER.glob("*.py")}


def test_the_examples_cover_what_the_docs_promise(dag_bag):
    from airflow_provider_sparkk8s.operators.driver_cleanup import SparkK8sDriverCleanupOperator
    from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
    from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor

    dags = dag_bag.dags
    assert set(dags) == {
        "spark_pi", "pyspark_pod_template", "spark_fan_out", "spark_application_sensor", "spark_dry_run",
        "spark_leftover_drivers",
    }  # fmt: skip
    spark_pi = dags["spark_pi"].get_task("spark_pi")
    assert isinstance(spark_pi, SparkK8sSubmitOperator) and spark_pi.deferrable
    assert spark_pi.application == "local:///opt/sparkk8s/examples/pi.py"
    assert spark_pi.java_class is None and spark_pi.num_executors == 2
    template_task = dags["pyspark_pod_template"].get_task("pi_py")
    assert template_task.application.endswith(".py")
    assert isinstance(template_task.driver_pod_template, dict)
    fan_out = dags["spark_fan_out"].get_task("daily_aggregate")
    assert type(fan_out).__name__ == "MappedOperator"
    sensor = dags["spark_application_sensor"].get_task("wait_for_application")
    assert isinstance(sensor, SparkK8sApplicationSensor)
    assert dags["spark_dry_run"].get_task("render_spark_pi").render_only is True
    cleanup = dags["spark_leftover_drivers"].get_task("delete_leftover_drivers")
    assert isinstance(cleanup, SparkK8sDriverCleanupOperator) and not cleanup.list_only
