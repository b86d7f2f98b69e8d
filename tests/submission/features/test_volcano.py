"""Spark's VolcanoFeatureStep: annotation, PodGroup from a template file or JSON, errors."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.builder import active_steps, build_driver_spec
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import volcano
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, make_conf

STEP = "org.apache.spark.deploy.k8s.features.VolcanoFeatureStep"
TEMPLATE = "/etc/pg.yaml"


def run(extra=None, files=None):
    conf = make_conf(extra or {}, local=LocalInputs(files=files or {}, spark_user="alice"))
    return volcano.step(conf, SparkPod.initial())


def test_bare_pod_group_and_annotation():
    result = run({"spark.kubernetes.namespace": "batch"})
    annotations = result.pod.pod["metadata"]["annotations"]
    assert annotations == {"scheduling.k8s.io/group-name": f"{APP_ID}-podgroup"}
    assert list(result.pre_resources) == [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"{APP_ID}-podgroup", "namespace": "batch"},
            "spec": {},
        }
    ]


def test_template_file_keeps_its_fields_but_not_its_name():
    text = (
        b"kind: PodGroup\nmetadata: {name: x, namespace: y, labels: {a: b}}\n"
        b"spec: {queue: q, minMember: 2, minResources: {cpu: 2, memory: 1Gi}}\n"
    )
    group = run({volcano.TEMPLATE_FILE_KEY: TEMPLATE}, {TEMPLATE: text}).pre_resources[0]
    assert group["metadata"] == {
        "name": f"{APP_ID}-podgroup",
        "namespace": "default",
        "labels": {"a": "b"},
    }
    assert group["spec"] == {
        "queue": "q",
        "minMember": 2,
        "minResources": {"cpu": "2", "memory": "1Gi"},
    }


def test_file_wins_over_json():
    extra = {
        volcano.TEMPLATE_FILE_KEY: TEMPLATE,
        volcano.TEMPLATE_JSON_KEY: '{"spec":{"queue":"j"}}',
    }
    group = run(extra, {TEMPLATE: b"spec: {queue: f}\n"}).pre_resources[0]
    assert group["spec"] == {"queue": "f"}
    only_json = run({volcano.TEMPLATE_JSON_KEY: '{"spec":{"queue":"j"}}'}).pre_resources[0]
    assert only_json["spec"] == {"queue": "j"}


@pytest.mark.parametrize(
    ("extra", "files", "key"),
    [
        ({volcano.TEMPLATE_JSON_KEY: "{not json"}, {}, volcano.TEMPLATE_JSON_KEY),
        (
            {volcano.TEMPLATE_FILE_KEY: TEMPLATE},
            {TEMPLATE: b"kind: Pod\n"},
            volcano.TEMPLATE_FILE_KEY,
        ),
        (
            {volcano.TEMPLATE_FILE_KEY: TEMPLATE},
            {TEMPLATE: b"- a list\n"},
            volcano.TEMPLATE_FILE_KEY,
        ),
        ({volcano.TEMPLATE_FILE_KEY: TEMPLATE}, {}, volcano.TEMPLATE_FILE_KEY),
    ],
)
def test_bad_templates_name_the_key(extra, files, key):
    with pytest.raises(SparkConfError) as err:
        run(extra, files)
    assert err.value.key == key


def test_recognised_by_sparks_class_name_and_run_last():
    conf = make_conf({"spark.kubernetes.driver.pod.featureSteps": STEP})
    assert active_steps(conf)[-1].name == STEP
    spec = build_driver_spec(conf)
    assert [obj["kind"] for obj in spec.pre_resources] == ["PodGroup"]


def test_excluded_by_class_name_too():
    conf = make_conf(
        {
            "spark.kubernetes.driver.pod.featureSteps": STEP,
            "spark.kubernetes.driver.pod.excludedFeatureSteps": STEP,
        }
    )
    assert build_driver_spec(conf).pre_resources == ()
