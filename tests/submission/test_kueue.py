"""Kueue admission in the pure core: the Workload's PodSets and the driver's group metadata."""

from __future__ import annotations

import re

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import kueue
from airflow_provider_sparkk8s.submission.conf import MainAppResource
from airflow_provider_sparkk8s.submission.render import render
from tests.submission.test_render import prep

QUEUE = {"spark.kubernetes.kueue.queueName": "team-a"}


def spark_container(spec):
    return spec["containers"][-1]


def test_without_the_key_nothing_changes():
    plain = render(prep())
    assert plain.workload is None
    assert not any(k.startswith("kueue.x-k8s.io/") for k in plain.driver_pod["metadata"]["labels"])


def test_workload_holds_the_driver_as_rendered_and_the_executors():
    rendered = render(
        prep(
            {
                **QUEUE,
                "spark.driver.memory": "2g",
                "spark.driver.cores": "2",
                "spark.executor.instances": "4",
                "spark.executor.memory": "3g",
                "spark.executor.cores": "2",
            }
        )
    )
    workload = rendered.workload
    assert workload is not None
    assert rendered.objects[0] is workload  # sent first
    assert workload["apiVersion"] == "kueue.x-k8s.io/v1beta2" and workload["kind"] == "Workload"
    assert workload["metadata"]["name"] == rendered.app_id
    assert workload["metadata"]["namespace"] == rendered.namespace
    assert workload["spec"]["queueName"] == "team-a"
    assert workload["metadata"]["annotations"] == {"kueue.x-k8s.io/is-group-workload": "true"}
    driver, executor = workload["spec"]["podSets"]
    assert (driver["name"], driver["count"]) == ("driver", 1)
    assert (executor["name"], executor["count"]) == ("executor", 4)
    pod_resources = spark_container(rendered.driver_pod["spec"])["resources"]
    assert spark_container(driver["template"]["spec"])["resources"]["requests"] == {
        **pod_resources["limits"],
        **pod_resources["requests"],
    }
    assert spark_container(driver["template"]["spec"])["resources"]["requests"] == {
        "cpu": "2",
        "memory": "2432Mi",
    }
    assert spark_container(executor["template"]["spec"])["resources"]["requests"] == {
        "memory": f"{3072 + 384}Mi",
        "cpu": "2",
    }


def test_the_driver_is_the_one_member_of_the_group():
    rendered = render(prep(QUEUE))
    metadata = rendered.driver_pod["metadata"]
    name = rendered.app_id
    assert {k: v for k, v in metadata["labels"].items() if k.startswith("kueue")} == {
        "kueue.x-k8s.io/queue-name": "team-a",
        "kueue.x-k8s.io/pod-group-name": name,
        "kueue.x-k8s.io/prebuilt-workload-name": name,
    }
    assert {k: v for k, v in metadata["annotations"].items() if k.startswith("kueue")} == {
        "kueue.x-k8s.io/pod-group-total-count": "1",
        "kueue.x-k8s.io/role-hash": "driver",
        "kueue.x-k8s.io/retriable-in-group": "false",
    }
    executor_labels = [
        k for k in rendered.system_properties if k.startswith("spark.kubernetes.executor.label.")
    ]
    assert executor_labels == []  # executors are the driver's children, never gated


def test_python_executors_use_the_drivers_0_4_factor():
    python = MainAppResource("python", "local:///opt/app.py")
    rendered = render(prep({**QUEUE, "spark.executor.memory": "2g"}, main_app_resource=python))
    assert rendered.workload is not None
    executor = rendered.workload["spec"]["podSets"][1]
    assert spark_container(executor["template"]["spec"])["resources"]["limits"] == {
        "memory": f"{2048 + 819}Mi"
    }


def test_no_executors_no_executor_pod_set():
    rendered = render(prep({**QUEUE, "spark.executor.instances": "0"}))
    assert rendered.workload is not None
    assert [s["name"] for s in rendered.workload["spec"]["podSets"]] == ["driver"]


def test_dynamic_allocation_reserves_max_executors_or_is_refused():
    dynamic = {**QUEUE, "spark.dynamicAllocation.enabled": "true"}
    rendered = render(prep({**dynamic, "spark.dynamicAllocation.maxExecutors": "6"}))
    assert rendered.workload is not None
    assert rendered.workload["spec"]["podSets"][1]["count"] == 6
    with pytest.raises(SparkConfError, match=re.escape("spark.dynamicAllocation.maxExecutors")):
        render(prep(dynamic))


def test_executor_template_dict_counts():
    template = {
        "spec": {
            "containers": [
                {"name": "spark-kubernetes-executor"},
                {"name": "logs", "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}}},
            ]
        }
    }
    rendered = render(prep(QUEUE, executor_pod_template=template))
    assert rendered.workload is not None
    spec = rendered.workload["spec"]["podSets"][1]["template"]["spec"]
    logs, spark = spec["containers"]
    assert logs["resources"]["requests"] == {"cpu": "200m", "memory": "64Mi"}  # from limits
    assert spark["name"] == "spark-kubernetes-executor"


def test_placement_of_the_driver_is_kept():
    rendered = render(prep({**QUEUE, "spark.kubernetes.driver.node.selector.pool": "drivers"}))
    assert rendered.workload is not None
    driver = rendered.workload["spec"]["podSets"][0]["template"]["spec"]
    assert driver["nodeSelector"] == {"pool": "drivers"}
    assert "volumes" not in driver and "env" not in spark_container(driver)


@pytest.mark.parametrize("name", ["", "Team_A", "a" * 64])
def test_a_bad_queue_name_names_the_key(name):
    with pytest.raises(SparkConfError, match=re.escape("spark.kubernetes.kueue.queueName")):
        render(prep({"spark.kubernetes.kueue.queueName": name}))


def test_own_kueue_labels_are_refused_with_the_queue_key():
    conf = {**QUEUE, "spark.kubernetes.executor.label.kueue.x-k8s.io/queue-name": "other"}
    with pytest.raises(SparkConfError, match=re.escape("executor.label.kueue.x-k8s.io/queue-name")):
        render(prep(conf))


def test_pod_set_spec_defaults_requests_from_limits_only_where_missing():
    spec = kueue.pod_set_spec(
        {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "env": [{"name": "SECRET", "value": "x"}],
                    "resources": {
                        "requests": {"cpu": "1"},
                        "limits": {"cpu": "2", "memory": "1Gi"},
                    },
                }
            ],
            "volumes": [{"name": "v"}],
        }
    )
    assert spec == {
        "containers": [
            {
                "name": "c",
                "image": "i",
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "2", "memory": "1Gi"},
                },
            }
        ]
    }


def test_the_queue_timeout_is_a_spark_time_in_seconds_by_default_and_needs_a_queue():
    queue = {kueue.QUEUE_NAME_KEY: "team-queue"}
    assert kueue.queue_timeout_seconds(queue) is None
    assert kueue.queue_timeout_seconds({**queue, kueue.QUEUE_TIMEOUT_KEY: "30min"}) == 1800.0
    assert kueue.queue_timeout_seconds({**queue, kueue.QUEUE_TIMEOUT_KEY: "900"}) == 900.0
    assert kueue.queue_timeout_seconds({**queue, kueue.QUEUE_TIMEOUT_KEY: "1500ms"}) == 1.5
    for bad in ("0", "-5s", "soon"):
        with pytest.raises(SparkConfError, match=re.escape(f"{kueue.QUEUE_TIMEOUT_KEY}='{bad}'")):
            kueue.queue_timeout_seconds({**queue, kueue.QUEUE_TIMEOUT_KEY: bad})
    # refused before any request: the render (every face's first step) checks it too
    with pytest.raises(
        SparkConfError, match=re.escape("spark.kubernetes.kueue.queueName is not set")
    ):
        kueue.queue_name({kueue.QUEUE_TIMEOUT_KEY: "10m"})
