"""What Airflow's serialized DAG holds of SparkK8sSubmitOperator for the Spark UI plugin
(issue 44): the connection (added to the serialized fields, not a template field), the
namespace and conf unrendered; a mapped task's in its partial arguments."""

from __future__ import annotations

import datetime
import json

from airflow.sdk import DAG
from airflow.serialization.serialized_objects import BaseSerialization, DagSerialization

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.triggers.spark_k8s_submit import SparkK8sSubmitTrigger


def _tasks(dag: DAG) -> dict[str, dict]:
    data = json.loads(json.dumps(DagSerialization.to_dict(dag)))
    DagSerialization.validate_schema(data)
    return {task["__var"]["task_id"]: task["__var"] for task in data["dag"]["tasks"]}


def test_the_connection_is_serialized_beside_the_unrendered_template_fields():
    with DAG("d", start_date=datetime.datetime(2026, 1, 1), schedule=None) as dag:
        SparkK8sSubmitOperator(
            task_id="named", application="x.py", kubernetes_conn_id="spark_a", namespace="jobs"
        )
        SparkK8sSubmitOperator(
            task_id="default", application="x.py", conf={"spark.kubernetes.namespace": "{{ ns }}"}
        )
    tasks = _tasks(dag)
    assert tasks["named"]["kubernetes_conn_id"] == "spark_a"
    assert tasks["named"]["namespace"] == "jobs"
    assert tasks["default"]["kubernetes_conn_id"] == "spark_k8s_default"
    assert tasks["default"]["conf"] == {"spark.kubernetes.namespace": "{{ ns }}"}
    assert "kubernetes_conn_id" not in SparkK8sSubmitOperator.template_fields
    # Read back as Airflow's scheduler and api-server do.
    back = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    assert back.get_task("named").kubernetes_conn_id == "spark_a"


def test_a_mapped_tasks_connection_is_in_its_partial_arguments():
    with DAG("m", start_date=datetime.datetime(2026, 1, 1), schedule=None) as dag:
        SparkK8sSubmitOperator.partial(
            task_id="mapped", application="x.py", kubernetes_conn_id="spark_b"
        ).expand(namespace=["a", "b"])
    task = _tasks(dag)["mapped"]
    assert task["partial_kwargs"]["kubernetes_conn_id"] == "spark_b"
    assert task["expand_input"]["value"]["__var"] == {"namespace": ["a", "b"]}


def test_a_worker_free_task_serializes_its_start_trigger_args_for_the_scheduler():
    """The scheduler defers from the serialized task: start_from_trigger and the trigger's
    kwargs, unrendered, survive the round trip; and the triggerer renders those of the kwargs
    the task templates (`BaseTrigger.task_instance`'s rule)."""
    with DAG("w", start_date=datetime.datetime(2026, 1, 1), schedule=None) as dag:
        SparkK8sSubmitOperator(
            task_id="free",
            application="s3a://jobs/etl.py",
            image="apache/spark:4.0.1",
            conf={"spark.app.day": "{{ ds }}"},
            execution_timeout=datetime.timedelta(hours=1),
            start_from_trigger=True,
        )
    back = DagSerialization.from_dict(DagSerialization.to_dict(dag)).get_task("free")
    assert back.start_from_trigger is True
    args = back.start_trigger_args
    assert args.trigger_cls.endswith("triggers.spark_k8s_submit.SparkK8sSubmitTrigger")
    assert args.next_method == "execute_worker_free_end"
    assert args.timeout == datetime.timedelta(hours=1)
    kwargs = BaseSerialization.deserialize(args.trigger_kwargs)  # as the triggerer decodes
    assert kwargs["conf"] == {"spark.app.day": "{{ ds }}"}
    assert set(back.template_fields) <= set(kwargs)
    assert SparkK8sSubmitTrigger(**kwargs).parameters()["conf"] == {"spark.app.day": "{{ ds }}"}
