"""The Spark UI's trust rules (application/ui/spark_ui_access.py) on plain data: the task's
connection from its definition, its namespace as the operator picks it, the XCom's hint
against both, a driver pod's identity and UI port, kube-apiserver's refusals reworded."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
)
from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget
from airflow_provider_sparkk8s.application.ui.spark_ui_access import (
    TaskDefinition,
    UiRefused,
    api_refusal,
    check_hint,
    driver_ui_port,
    found_definition,
    is_api_refusal,
    needs_rendered,
    task_connection,
    task_namespace,
)

TASK = "etl.pi of run r"
OURS = {"_task_module": "airflow_provider_sparkk8s.operators.spark_k8s",
        "task_type": "SparkK8sSubmitOperator"}  # fmt: skip
REF = TaskInstanceRef("etl", "pi", "r")


def definition(expanded: frozenset[str] = frozenset(), **values: Any) -> TaskDefinition:
    return TaskDefinition(values, expanded)


def test_the_connection_is_the_definitions():
    assert task_connection(definition(kubernetes_conn_id="spark_a"), TASK) == "spark_a"


def test_a_mapped_task_without_one_in_partial_has_the_operators_default():
    mapped = definition(_is_mapped=True, **OURS)
    assert task_connection(mapped, TASK) == "spark_k8s_default"
    # A subclass may change the default: not guessed.
    subclass = definition(_is_mapped=True, _task_module="mine", task_type="MySpark")
    with pytest.raises(UiRefused, match="names no kubernetes_conn_id"):
        task_connection(subclass, TASK)


@pytest.mark.parametrize(
    ("found", "status", "text"),
    [
        (definition(namespace="jobs"), 403, "names no kubernetes_conn_id"),
        (definition(frozenset({"kubernetes_conn_id"})), 403, "expands over kubernetes_conn_id"),
    ],
)
def test_no_connection_from_the_definition_is_a_refusal(found, status, text):
    with pytest.raises(UiRefused, match=text) as refused:
        task_connection(found, TASK)
    assert refused.value.status == status


def test_a_task_without_a_definition_is_a_404():
    with pytest.raises(UiRefused, match="No definition of etl") as refused:
        found_definition(None, TASK)
    assert refused.value.status == 404


@pytest.mark.parametrize(
    ("values", "rendered", "namespace"),
    [
        ({"namespace": "jobs", "conf": {"spark.kubernetes.namespace": "other"}}, None, "jobs"),
        ({"conf": {"spark.kubernetes.namespace": "from-conf", "x": "{{ ds }}"}}, None, "from-conf"),
        ({"conf": {}}, None, "conn-ns"),
        ({}, None, "conn-ns"),
        ({"namespace": "{{ params.ns }}"}, {"namespace": "rendered-ns"}, "rendered-ns"),
        (
            {"conf": {"spark.kubernetes.namespace": "{{ var.value.ns }}"}},
            {"conf": {"spark.kubernetes.namespace": "team-a"}},
            "team-a",
        ),
        # A conf given as a template file; Airflow stored the rendered one as JSON text.
        ({"conf": "conf.json"}, {"conf": '{"spark.kubernetes.namespace": "filed"}'}, "filed"),
        ({"conf": "conf.json"}, {"conf": {"a": "b"}}, "conn-ns"),
    ],
)
def test_the_namespace_is_the_one_the_operator_submits_to(values, rendered, namespace):
    found = TaskDefinition(values)
    assert needs_rendered(found) == (rendered is not None)
    assert task_namespace(found, rendered, "conn-ns", TASK) == namespace


def test_an_expanded_namespace_comes_from_the_map_indexs_rendered_fields():
    found = definition(frozenset({"namespace"}))
    assert needs_rendered(found)
    assert task_namespace(found, {"namespace": "b"}, "conn-ns", TASK) == "b"


@pytest.mark.parametrize(
    ("values", "rendered", "text"),
    [
        ({"namespace": "{{ params.ns }}"}, None, "holds no rendered value"),
        ({"conf": "conf.json"}, {"conf": "Truncated. You can change ..."}, "not readable"),
        ({"namespace": "{{ params.ns }}"}, {"namespace": "{{ still }}"}, "not a namespace"),
    ],
)
def test_a_namespace_that_cannot_be_known_is_a_refusal(values, rendered, text):
    with pytest.raises(UiRefused, match=text) as refused:
        task_namespace(TaskDefinition(values), rendered, "conn-ns", TASK)
    assert refused.value.status == 403


def test_the_xcoms_connection_and_namespace_must_be_the_tasks():
    check_hint(SparkUiTarget("spark_a", "jobs", "pi-driver"), "spark_a", "jobs")
    with pytest.raises(UiRefused, match=r"names connection 'admin'.*names 'spark_a'"):
        check_hint(SparkUiTarget("admin", "jobs", "pi-driver"), "spark_a", "jobs")
    with pytest.raises(UiRefused, match=r"namespace 'kube-system'.*submits to 'jobs'"):
        check_hint(SparkUiTarget("spark_a", "kube-system", "etcd"), "spark_a", "jobs")


def pod(labels: dict[str, str], namespace: str = "jobs", ports: Any = None) -> dict[str, Any]:
    if ports is None:
        ports = [{"name": "driver-rpc-port", "containerPort": 7078},
                 {"name": "spark-ui", "containerPort": 4041}]  # fmt: skip
    return {
        "metadata": {"name": "pi-driver", "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "ports": ports}]},
    }


LABELS = {TASK_INSTANCE_LABEL: REF.digest, "spark-role": "driver"}


def test_the_task_instances_driver_gives_its_own_ui_port():
    assert driver_ui_port(pod(LABELS), REF, "jobs") == 4041


@pytest.mark.parametrize(
    ("candidate", "status", "text"),
    [
        (pod({"spark-role": "driver"}), 403, "does not carry the label"),
        (
            pod({**LABELS, TASK_INSTANCE_LABEL: TaskInstanceRef("etl", "pi", "r2").digest}),
            403,
            "not this task instance's driver",
        ),
        (pod({**LABELS, "spark-role": "executor"}), 403, "not a Spark driver"),
        (pod(LABELS, namespace="other"), 403, "not in the task's namespace"),
        (pod(LABELS, ports=[]), 404, "declares no 'spark-ui' port"),
    ],
)
def test_any_other_pod_is_refused_naming_what_is_wrong(candidate, status, text):
    with pytest.raises(UiRefused, match=text) as refused:
        driver_ui_port(candidate, REF, "jobs")
    assert refused.value.status == status


def test_the_api_servers_refusals_name_the_missing_permission_only():
    refused = api_refusal(403, "get pods/proxy", "jobs", "spark_a")
    assert refused.status == 403
    assert refused.message.startswith(
        "Connection 'spark_a''s identity may not get pods/proxy in namespace 'jobs'"
    )
    assert "401" in api_refusal(401, "get pods", "jobs", "spark_a").message
    assert is_api_refusal(403, "application/json")
    assert not is_api_refusal(403, "text/html;charset=utf-8")  # the driver UI's own ACLs
    assert not is_api_refusal(404, "application/json")
