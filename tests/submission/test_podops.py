"""The copy-on-write edits the feature steps make on plain pod dicts: the input is never
changed, what is unchanged is shared, lists append and maps merge as fabric8's builders do."""

from __future__ import annotations

from typing import Any

from airflow_provider_sparkk8s.submission.podops import (
    add_to_list,
    child,
    editable,
    env_var,
    merge_into,
    volume_mount,
)
from airflow_provider_sparkk8s.submission.spec import SparkPod


def test_editable_copies_pod_and_container_shallowly() -> None:
    spark_pod = SparkPod(pod={"metadata": {"name": "pi"}, "spec": {}}, container={"name": "c"})
    pod, container = editable(spark_pod)
    pod["kind"] = "Pod"
    container["image"] = "spark"
    assert spark_pod.pod == {"metadata": {"name": "pi"}, "spec": {}}
    assert spark_pod.container == {"name": "c"}
    assert pod["metadata"] is spark_pod.pod["metadata"]


def test_child_copies_every_dict_on_the_path_and_creates_missing_ones() -> None:
    original_metadata = {"labels": {"a": "1"}}
    pod: dict[str, Any] = {"metadata": original_metadata, "spec": {"containers": []}}
    labels = child(pod, "metadata", "labels")
    labels["b"] = "2"
    assert pod["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert original_metadata == {"labels": {"a": "1"}}
    assert child(pod, "spec", "securityContext") == {} and pod["spec"]["securityContext"] == {}


def test_add_to_list_appends_into_a_new_list_and_creates_none_for_nothing() -> None:
    volumes = [{"name": "a"}]
    pod = {"spec": {"volumes": volumes}}
    add_to_list(pod, ("spec", "volumes"), [{"name": "b"}])
    assert pod["spec"]["volumes"] == [{"name": "a"}, {"name": "b"}]
    assert volumes == [{"name": "a"}]
    empty: dict = {}
    add_to_list(empty, ("spec", "volumes"), [])
    assert empty == {}


def test_merge_into_lets_new_values_win_without_touching_the_input() -> None:
    labels = {"app": "old", "keep": "x"}
    pod = {"metadata": {"labels": labels}}
    merge_into(pod, ("metadata", "labels"), {"app": "new", "role": "driver"})
    assert pod["metadata"]["labels"] == {"app": "new", "keep": "x", "role": "driver"}
    assert labels == {"app": "old", "keep": "x"}
    untouched: dict = {}
    merge_into(untouched, ("metadata", "annotations"), {})
    assert untouched == {}


def test_env_var_and_volume_mount_are_the_api_shapes() -> None:
    assert env_var("SPARK_USER", "alice") == {"name": "SPARK_USER", "value": "alice"}
    assert volume_mount("conf", "/opt/spark/conf") == {
        "name": "conf",
        "mountPath": "/opt/spark/conf",
    }
