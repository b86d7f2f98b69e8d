"""The operator's parameters as one submission's Spark conf: the Kubernetes parameters over
`conf`, the platform's labels and the task-instance identity on driver and executors, the
per-submission pod name, and pod templates given as paths, dicts or rendered text."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.task.submission_plan import (
    KubernetesParameters,
    kubernetes_conf,
    namespace_of,
    operator_keys,
    submission_conf,
    template_dict,
)
from airflow_provider_sparkk8s.application.task.task_identity import (
    TaskInstanceRef,
    driver_label_conf,
    driver_pod_name,
    executor_label_conf,
)
from airflow_provider_sparkk8s.errors import SparkConfError

REF = TaskInstanceRef(dag_id="etl", task_id="pi", run_id="manual__1")
PARSED = {"spark.app.name": "pi", "spark.kubernetes.namespace": "from-conf"}
K8S = KubernetesParameters(namespace="jobs", image="apache/spark:4.1.0", spark_version="4.1.0")


def test_kubernetes_parameters_win_and_the_identity_and_pod_name_are_added() -> None:
    conf = submission_conf(PARSED, K8S, REF, 2)
    assert conf["spark.kubernetes.namespace"] == "jobs"
    assert conf["spark.kubernetes.container.image"] == "apache/spark:4.1.0"
    assert conf["spark.kubernetes.driver.pod.name"] == driver_pod_name("pi", REF, 2)
    assert conf["spark.kubernetes.driver.pod.name"].endswith("-2-driver")
    assert driver_label_conf(REF, 2).items() <= conf.items()
    assert executor_label_conf(REF, 2).items() <= conf.items()


def test_a_pod_name_the_author_set_is_kept() -> None:
    conf = submission_conf({**PARSED, "spark.kubernetes.driver.pod.name": "mine"}, K8S, REF, 1)
    assert conf["spark.kubernetes.driver.pod.name"] == "mine"


def test_platform_labels_go_on_driver_and_executors() -> None:
    conf = submission_conf(PARSED, K8S, REF, 1, {"team": "data"})
    assert conf["spark.kubernetes.driver.label.team"] == "data"
    assert conf["spark.kubernetes.executor.label.team"] == "data"


def test_the_exit_exception_annotation_is_on_from_4_1_unless_the_author_says_otherwise() -> None:
    key = "spark.kubernetes.driver.annotateExitException"
    assert submission_conf(PARSED, K8S, REF, 1)[key] == "true"
    assert submission_conf({**PARSED, key: "false"}, K8S, REF, 1)[key] == "false"
    older = KubernetesParameters(namespace="jobs", image="spark", spark_version="4.0.1")
    assert key not in submission_conf(PARSED, older, REF, 1)


def test_without_an_image_the_parameter_is_named() -> None:
    with pytest.raises(SparkConfError) as raised:
        submission_conf(PARSED, KubernetesParameters(namespace="jobs"), REF, 1)
    assert raised.value.key == "image" and raised.value.value is None
    driver_image = {**PARSED, "spark.kubernetes.driver.container.image": "spark"}
    assert submission_conf(driver_image, KubernetesParameters(namespace="jobs"), REF, 1)


def test_template_paths_go_through_conf_and_documents_do_not() -> None:
    params = KubernetesParameters(
        namespace="jobs",
        driver_pod_template=" /templates/driver.yaml ",
        executor_pod_template={"kind": "Pod", "spec": {}},
    )
    assert kubernetes_conf(params) == {
        "spark.kubernetes.namespace": "jobs",
        "spark.kubernetes.driver.podTemplateFile": "/templates/driver.yaml",
    }


def test_template_dict_reads_rendered_yaml_and_json_and_keeps_dicts() -> None:
    assert template_dict("driver_pod_template", "kind: Pod\nspec: {}\n") == {
        "kind": "Pod",
        "spec": {},
    }
    assert template_dict("driver_pod_template", '{"spec": {}}') == {"spec": {}}
    assert template_dict("driver_pod_template", "/templates/driver.yaml") is None
    assert template_dict("driver_pod_template", None) is None


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("kind: Service\nspec: {}\n", "Service"),
        ("- a\n- b\n", "list"),
        ("spec: [unclosed\nx", "<rendered template, line 2>"),
        ("   ", "   "),
    ],
)
def test_a_template_that_is_not_a_pod_names_the_parameter(value: str, shown: str) -> None:
    with pytest.raises(SparkConfError) as raised:
        template_dict("executor_pod_template", value)
    assert (raised.value.key, raised.value.value) == ("executor_pod_template", shown)


def test_operator_keys_are_what_the_operator_added_beyond_the_authors_input() -> None:
    conf = submission_conf(PARSED, K8S, REF, 1)
    added = operator_keys(conf, PARSED)
    assert "spark.app.name" not in added and "spark.kubernetes.namespace" not in added
    assert "spark.kubernetes.container.image" not in added
    assert added["spark.kubernetes.driver.pod.name"] == conf["spark.kubernetes.driver.pod.name"]


def test_namespace_of_prefers_the_parameter_then_conf_else_none() -> None:
    assert namespace_of("jobs", {"spark.kubernetes.namespace": "other"}) == "jobs"
    assert namespace_of(None, {"spark.kubernetes.namespace": "other"}) == "other"
    assert namespace_of(None, {}) is None
