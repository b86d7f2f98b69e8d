import pytest
import yaml

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import pod_template_config_map as step_module
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import PREFIX, make_conf

KEY = "spark.kubernetes.executor.podTemplateFile"
TEXT = "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    tier: exec   # kept as written\nspec:\n  containers:\n  - name: executor\n"


def test_template_file_is_shipped_verbatim_and_the_conf_points_at_the_mount():
    conf = make_conf(
        {KEY: "/tpl/exec.yaml"}, local=LocalInputs(files={"/tpl/exec.yaml": TEXT.encode()})
    )
    result = step_module.step(conf, SparkPod.initial())
    name = f"{PREFIX}-driver-podspec-conf-map"
    assert result.pod.pod["spec"]["volumes"] == [
        {
            "name": "pod-template-volume",
            "configMap": {
                "name": name,
                "items": [{"key": "podspec-configmap-key", "path": "pod-spec-template.yml"}],
            },
        }
    ]
    assert result.pod.container["volumeMounts"] == [
        {"name": "pod-template-volume", "mountPath": "/opt/spark/pod-template"}
    ]
    assert dict(result.system_properties) == {KEY: "/opt/spark/pod-template/pod-spec-template.yml"}
    assert list(result.resources) == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "immutable": True,
            "data": {"podspec-configmap-key": TEXT},
        }
    ]


def test_template_dict_is_shipped_as_yaml_and_the_callers_dict_is_untouched():
    template = {
        "metadata": {"labels": {"version": 2}},
        "spec": {"containers": [{"name": "e", "args": []}]},
    }
    conf = make_conf(executor_pod_template=template)
    result = step_module.step(conf, SparkPod.initial())
    shipped = yaml.safe_load(result.resources[0]["data"]["podspec-configmap-key"])
    assert shipped == {
        "metadata": {"labels": {"version": "2"}},
        "spec": {"containers": [{"name": "e"}]},
    }
    assert template == {
        "metadata": {"labels": {"version": 2}},
        "spec": {"containers": [{"name": "e", "args": []}]},
    }
    assert dict(result.system_properties) == {KEY: "/opt/spark/pod-template/pod-spec-template.yml"}


def test_no_executor_template_changes_nothing():
    result = step_module.step(make_conf(), SparkPod.initial())
    assert result.pod == SparkPod.initial() and list(result.resources) == []


@pytest.mark.parametrize(
    ("files", "extra"),
    [
        ({}, {}),  # unreadable
        ({"/t.yaml": b"kind: Deployment\n"}, {}),
        ({"/t.yaml": b"spec: [1, 2\n"}, {}),
        ({"/t.yaml": b""}, {}),
        ({"/t.yaml": b"metadata: {annotations: {a: '" + b"x" * (1 << 20) + b"'}}\n"}, {}),
    ],
)
def test_missing_malformed_or_oversized_executor_templates_are_refused(files, extra):
    conf = make_conf({KEY: "/t.yaml", **extra}, local=LocalInputs(files=files))
    with pytest.raises(SparkConfError) as err:
        step_module.step(conf, SparkPod.initial())
    assert err.value.key == KEY
    assert err.value.value == "/t.yaml"


def test_invalid_utf8_is_refused_by_4_3_and_replaced_by_3_5():
    files = {"/t.yaml": b"metadata: {labels: {a: '\xff'}}\nspec: {}\n"}
    with pytest.raises(SparkConfError, match="UTF-8"):
        step_module.step(
            make_conf({KEY: "/t.yaml"}, local=LocalInputs(files=files)), SparkPod.initial()
        )
    old = step_module.step(
        make_conf({KEY: "/t.yaml"}, version="3.5.9", local=LocalInputs(files=files)),
        SparkPod.initial(),
    )
    assert (
        old.resources[0]["data"]["podspec-configmap-key"]
        == "metadata: {labels: {a: '\ufffd'}}\nspec: {}\n"
    )
