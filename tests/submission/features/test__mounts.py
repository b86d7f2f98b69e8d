"""What most steps add to the pod: volumes, mounts and env appended after a template's (no
de-duplication), the first clash the API server would refuse, and Spark's immutable
ConfigMaps and Secrets."""

from __future__ import annotations

from typing import Any

from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    first_clash,
    immutable_data_object,
)
from airflow_provider_sparkk8s.submission.spec import SparkPod

TEMPLATE = SparkPod(
    pod={"metadata": {}, "spec": {"volumes": [{"name": "tpl", "emptyDir": {}}]}},
    container={"volumeMounts": [{"name": "tpl", "mountPath": "/tpl"}]},
)
CONF_VOLUME: dict[str, Any] = {"name": "conf", "configMap": {"name": "pi-conf"}}
CONF_MOUNT: dict[str, Any] = {"name": "conf", "mountPath": "/opt/spark/conf"}


def test_volumes_mounts_and_env_are_appended_after_the_templates() -> None:
    env = [{"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"}]
    result = add_volumes_and_mounts(TEMPLATE, [CONF_VOLUME], [CONF_MOUNT], env)
    assert result.pod["spec"]["volumes"] == [{"name": "tpl", "emptyDir": {}}, CONF_VOLUME]
    assert result.container["volumeMounts"] == [{"name": "tpl", "mountPath": "/tpl"}, CONF_MOUNT]
    assert result.container["env"] == env
    assert TEMPLATE.pod["spec"]["volumes"] == [{"name": "tpl", "emptyDir": {}}]
    assert "env" not in TEMPLATE.container


def test_nothing_to_add_creates_no_empty_lists() -> None:
    result = add_volumes_and_mounts(SparkPod.initial(), (), ())
    assert result == SparkPod.initial()


def test_first_clash_finds_a_used_name_or_path_in_the_pod_or_earlier_in_the_lists() -> None:
    assert first_clash(TEMPLATE, [CONF_VOLUME], [CONF_MOUNT]) is None
    assert (
        first_clash(TEMPLATE, [CONF_VOLUME, {"name": "tpl"}], [CONF_MOUNT, {"mountPath": "/x"}])
        == 1
    )
    assert first_clash(TEMPLATE, [{"name": "other"}], [{"mountPath": "/tpl"}]) == 0
    twice = [CONF_VOLUME, {"name": "conf"}]
    assert first_clash(SparkPod.initial(), twice, [CONF_MOUNT, {"mountPath": "/y"}]) == 1


def test_immutable_data_objects_leave_out_empty_data_as_fabric8_does() -> None:
    assert immutable_data_object("ConfigMap", "pi-conf", {"spark.properties": "a=b"}) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pi-conf"},
        "immutable": True,
        "data": {"spark.properties": "a=b"},
    }
    assert "data" not in immutable_data_object("Secret", "pi-secret", {})
