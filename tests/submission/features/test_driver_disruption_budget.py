import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import driver_disruption_budget as pdb
from airflow_provider_sparkk8s.submission.render import render, to_yaml
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, PREFIX, make_conf

ON = {pdb.ENABLED_KEY: "true"}


def test_off_by_default_and_when_false():
    for extra in ({}, {pdb.ENABLED_KEY: "false"}):
        result = pdb.step(make_conf(extra), SparkPod.initial())
        assert (result.resources, result.pre_resources, result.system_properties) == ((), (), {})


def test_the_budget_covers_this_applications_driver_only():
    result = pdb.step(make_conf({**ON, "spark.kubernetes.namespace": "jobs"}), SparkPod.initial())
    assert result.pod == SparkPod.initial() and result.system_properties == {}
    assert result.resources == (
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {
                "name": f"{PREFIX}-driver-pdb",
                "namespace": "jobs",
                "labels": {"spark-app-selector": APP_ID},
            },
            "spec": {
                "minAvailable": 1,
                "selector": {"matchLabels": {"spark-app-selector": APP_ID, "spark-role": "driver"}},
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
        },
    )


@pytest.mark.parametrize("version", ["3.5.9", "4.0.5", "4.3.0"])
def test_rendered_after_the_pod_before_the_conf_map_and_selecting_the_driver(version):
    rendered = render(make_conf(ON, version=version))
    kinds = [obj["kind"] for obj in rendered.resources]
    assert kinds[-2:] == ["PodDisruptionBudget", "ConfigMap"]
    (budget,) = [obj for obj in rendered.resources if obj["kind"] == "PodDisruptionBudget"]
    labels = rendered.driver_pod["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert "kind: PodDisruptionBudget" in to_yaml(rendered.objects)  # what the dry runs print
    # The option is ours: Spark's spark.properties carries it like any other conf key.
    assert rendered.system_properties[pdb.ENABLED_KEY] == "true"


def test_a_bad_switch_names_the_key_and_the_value():
    with pytest.raises(SparkConfError) as caught:
        render(make_conf({pdb.ENABLED_KEY: "yes please"}))
    assert (caught.value.key, caught.value.value) == (pdb.ENABLED_KEY, "yes please")


def test_off_nothing_of_it_is_sent():
    for extra in ({}, {pdb.ENABLED_KEY: "false"}):
        rendered = render(make_conf(extra))
        assert "PodDisruptionBudget" not in [obj["kind"] for obj in rendered.objects]
