"""template_ext: pod template files (.yaml, .yml, .json) are rendered with Jinja by Airflow,
from the DAG's template_searchpath or an absolute path; other values ending so stay strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from airflow_provider_sparkk8s.application.task.submission_plan import template_dict
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

DRIVER_YAML = """apiVersion: v1
kind: Pod
metadata:
  labels:
    team: "{{ params.team }}"
spec:
  containers:
    - name: spark-kubernetes-driver
"""


def rendered(tmp_path: Path, **kwargs: Any) -> SparkK8sSubmitOperator:
    with DAG("templates", template_searchpath=[str(tmp_path)], params={"team": "data"}):
        operator = SparkK8sSubmitOperator(
            task_id="t", application="local:///app.py", image="spark:4", **kwargs
        )
    operator.render_template_fields({"params": {"team": "data"}})
    return operator


def test_extensions_declared() -> None:
    assert set(SparkK8sSubmitOperator.template_ext) == {".yaml", ".yml", ".json"}


def test_a_pod_template_file_in_the_search_path_is_rendered(tmp_path: Path) -> None:
    (tmp_path / "driver.yaml").write_text(DRIVER_YAML)
    (tmp_path / "executor.json").write_text(
        '{"kind": "Pod", "metadata": {"name": "{{ params.team }}"}}'
    )
    operator = rendered(
        tmp_path, driver_pod_template="driver.yaml", executor_pod_template="executor.json"
    )
    driver = template_dict("driver_pod_template", operator.driver_pod_template)
    assert driver is not None and driver["metadata"]["labels"] == {"team": "data"}
    executor = template_dict("executor_pod_template", operator.executor_pod_template)
    assert executor == {"kind": "Pod", "metadata": {"name": "data"}}


def test_an_absolute_template_path_is_read_and_rendered(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "driver.yml").write_text(DRIVER_YAML)
    operator = rendered(tmp_path / "empty", driver_pod_template=str(elsewhere / "driver.yml"))
    driver = template_dict("driver_pod_template", operator.driver_pod_template)
    assert driver is not None and driver["metadata"]["labels"]["team"] == "data"


def test_values_that_are_not_template_files_stay_strings(tmp_path: Path) -> None:
    operator = rendered(
        tmp_path,
        files=["s3a://bucket/{{ params.team }}/conf.yaml"],
        conf={"spark.kubernetes.driver.podTemplateFile": "/no/such/file.yaml"},
    )
    assert getattr(operator, "files") == ["s3a://bucket/data/conf.yaml"]  # noqa: B009
    assert operator.conf == {"spark.kubernetes.driver.podTemplateFile": "/no/such/file.yaml"}
