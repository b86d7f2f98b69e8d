import copy
import json

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import pod_template
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import make_conf

KEY = "spark.kubernetes.driver.podTemplateFile"
NAME_KEY = "spark.kubernetes.driver.podTemplateContainerName"

TEMPLATE_YAML = b"""
apiVersion: v1
kind: Pod
metadata:
  name: ignored-later
  labels:
    team: etl
    version: 1.10
    build: 42
    canary: true
  annotations:
    created: 2024-01-01
spec:
  priorityClassName: high
  tolerations:
  - {key: dedicated, operator: Equal, value: spark, effect: NoSchedule}
  initContainers:
  - name: init
    image: busybox
  containers:
  - name: sidecar
    image: envoy
    ports:
    - containerPort: 9901
  - name: spark
    image: will-be-replaced
    args: [--flag, 8080, true]
    env:
    - {name: DEBUG, value: true}
    - {name: EMPTY, value: null}
    resources:
      limits: {cpu: 2, memory: 4Gi}
      requests: {}
    volumeMounts: []
  volumes:
  - name: cache
    emptyDir: {sizeLimit: 1024}
"""


def conf_with_file(content, extra=None, **fields):
    return make_conf(
        {KEY: "/tpl/driver.yaml", **(extra or {})},
        local=LocalInputs(files={"/tpl/driver.yaml": content}),
        **fields,
    )


def test_no_template_gives_the_empty_pod_and_container():
    assert pod_template.initial_driver_pod(make_conf()) == SparkPod.initial()


def test_named_container_is_taken_out_and_the_rest_is_kept_as_fabric8_would_write_it():
    result = pod_template.initial_driver_pod(conf_with_file(TEMPLATE_YAML, {NAME_KEY: "spark"}))
    assert result.container == {
        "name": "spark",
        "image": "will-be-replaced",
        "args": ["--flag", "8080", "true"],
        "env": [{"name": "DEBUG", "value": "true"}, {"name": "EMPTY"}],
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
    }
    assert result.pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "ignored-later",
            "labels": {"team": "etl", "version": "1.1", "build": "42", "canary": "true"},
            "annotations": {"created": "2024-01-01"},
        },
        "spec": {
            "priorityClassName": "high",
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
            ],
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {"name": "sidecar", "image": "envoy", "ports": [{"containerPort": 9901}]}
            ],
            "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1024"}}],
        },
    }


@pytest.mark.parametrize("name", [None, "missing"])
def test_without_a_matching_name_the_first_container_is_spark_s(name):
    extra = {NAME_KEY: name} if name else {}
    result = pod_template.initial_driver_pod(conf_with_file(TEMPLATE_YAML, extra))
    assert result.container["name"] == "sidecar"
    assert [c["name"] for c in result.pod["spec"]["containers"]] == ["spark"]


def test_an_ambiguous_name_falls_back_to_the_first_container():
    template = {
        "spec": {
            "containers": [{"name": "a"}, {"name": "x", "image": "1"}, {"name": "x", "image": "2"}]
        }
    }
    result = pod_template.initial_driver_pod(
        make_conf({NAME_KEY: "x"}, driver_pod_template=template)
    )
    assert result.container == {"name": "a"}
    assert result.pod["spec"]["containers"] == [
        {"name": "x", "image": "1"},
        {"name": "x", "image": "2"},
    ]


def test_side_cars_keep_their_order_around_the_chosen_container():
    template = {"spec": {"containers": [{"name": "a"}, {"name": "spark"}, {"name": "b"}]}}
    result = pod_template.initial_driver_pod(
        make_conf({NAME_KEY: "spark"}, driver_pod_template=template)
    )
    assert [c["name"] for c in result.pod["spec"]["containers"]] == ["a", "b"]


def test_templates_without_containers_give_an_empty_container():
    content = b"metadata: {labels: {a: b}}\nspec: {hostNetwork: false}\n"
    assert pod_template.initial_driver_pod(conf_with_file(content)) == SparkPod(
        pod={"metadata": {"labels": {"a": "b"}}, "spec": {"hostNetwork": False}}, container={}
    )


def test_json_templates_are_read_too():
    content = json.dumps(
        {"kind": "Pod", "spec": {"containers": [{"name": "c", "args": [1]}]}}
    ).encode()
    result = pod_template.initial_driver_pod(conf_with_file(content))
    assert result.container == {"name": "c", "args": ["1"]}


def test_a_dict_template_wins_over_the_file_and_is_not_mutated():
    template = {
        "metadata": {"labels": {"n": 3}},
        "spec": {"containers": [{"name": "c", "env": []}], "volumes": None},
    }
    before = copy.deepcopy(template)
    conf = conf_with_file(TEMPLATE_YAML, driver_pod_template=template)
    result = pod_template.initial_driver_pod(conf)
    assert result == SparkPod(
        pod={"metadata": {"labels": {"n": "3"}}, "spec": {}}, container={"name": "c"}
    )
    assert template == before
    result.container["name"] = "changed"
    assert template == before


@pytest.mark.parametrize(
    ("files", "hint"),
    [
        ({}, "could not be read"),
        ({"/tpl/driver.yaml": b""}, "empty"),
        ({"/tpl/driver.yaml": b"- a\n- b\n"}, "not a mapping"),
        ({"/tpl/driver.yaml": b"metadata: {name: x}\n"}, "no spec"),
        ({"/tpl/driver.yaml": b"kind: Deployment\n"}, "kind"),
        ({"/tpl/driver.yaml": b"apiVersion: apps/v1\nkind: Pod\n"}, "apiVersion"),
        ({"/tpl/driver.yaml": b"spec: {containers: [\n"}, "line"),
        ({"/tpl/driver.yaml": b"kind: Pod\n---\nkind: Pod\n"}, "2 documents"),
        ({"/tpl/driver.yaml": b"spec: [1]\n"}, "spec is not a mapping"),
        ({"/tpl/driver.yaml": b"spec: {containers: {name: x}}\n"}, "spec.containers"),
        ({"/tpl/driver.yaml": b"spec: {volumes: [1]}\n"}, "spec.volumes"),
        ({"/tpl/driver.yaml": b"metadata: {labels: [a]}\n"}, "metadata.labels"),
        ({"/tpl/driver.yaml": b"spec: {nodeSelector: x}\n"}, "spec.nodeSelector"),
        ({"/tpl/driver.yaml": b"spec: {imagePullSecrets: [x]}\n"}, "spec.imagePullSecrets"),
        ({"/tpl/driver.yaml": b"spec: {containers: [{name: c, env: {A: b}}]}\n"}, r"\[c\]\.env"),
        ({"/tpl/driver.yaml": b"spec: {containers: [{args: x}]}\n"}, "args is not a list"),
        ({"/tpl/driver.yaml": b"spec: {containers: [{resources: []}]}\n"}, "resources is not"),
        ({"/tpl/driver.yaml": b"spec: {containers: [{resources: {limits: 1}}]}\n"}, "limits"),
        ({"/tpl/driver.yaml": b"!!python/object:os.system x\n"}, "not valid YAML"),
    ],
)
def test_missing_or_malformed_templates_name_the_key_and_the_path(files, hint):
    conf = make_conf({KEY: "/tpl/driver.yaml"}, local=LocalInputs(files=files))
    with pytest.raises(SparkConfError, match=hint) as err:
        pod_template.initial_driver_pod(conf)
    assert err.value.key == KEY
    assert err.value.value == "/tpl/driver.yaml"


def test_a_malformed_dict_template_names_the_key():
    with pytest.raises(SparkConfError) as err:
        pod_template.initial_driver_pod(make_conf(driver_pod_template={"kind": "Service"}))
    assert err.value.key == KEY and err.value.value == "<dict>"


def test_select_spark_container_does_not_mutate_the_pod():
    pod = {"metadata": {}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    before = copy.deepcopy(pod)
    pod_template.select_spark_container(pod, "b")
    assert pod == before


def test_a_template_namespace_becomes_the_submission_namespace():
    content = b"metadata: {name: t, namespace: other}\nspec: {containers: [{name: c}]}\n"
    conf = conf_with_file(content, {"spark.kubernetes.namespace": "jobs"})
    assert pod_template.initial_driver_pod(conf).pod["metadata"] == {
        "name": "t",
        "namespace": "jobs",
    }
    without = pod_template.initial_driver_pod(conf_with_file(b"metadata: {name: t}\nspec: {}\n"))
    assert "namespace" not in without.pod["metadata"]
