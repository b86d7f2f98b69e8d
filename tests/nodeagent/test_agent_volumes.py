"""Volume materialisation plans and mount plans (testenv/nodeagent/volumes.py)."""

from __future__ import annotations

import pytest

from testenv.nodeagent.env import ContainerConfigError, PodFacts
from testenv.nodeagent.volumes import (
    DEFAULT_TOKEN_SECONDS,
    Mount,
    TokenRequest,
    VolumeFile,
    VolumeNotReady,
    VolumePlan,
    plan_mounts,
    plan_volume,
    token_requests,
)

POD = {"metadata": {"name": "p", "namespace": "jobs", "labels": {"a": "1", "b": "2"}}, "spec": {}}
FACTS = PodFacts(POD, "127.1.2.10", "127.1.2.1")

API_ACCESS = {
    "name": "kube-api-access-x",
    "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        ],
    },
}  # fmt: skip


def test_the_service_account_volume_holds_token_ca_and_namespace():
    objects = {("ConfigMap", "kube-root-ca.crt"): {"ca.crt": b"PEM"}}
    tokens = {("kube-api-access-x", "token"): "jwt"}
    plan = plan_volume(API_ACCESS, FACTS, objects, tokens)
    assert plan == VolumePlan(
        "kube-api-access-x",
        "files",
        (
            VolumeFile("token", b"jwt", 0o644),
            VolumeFile("ca.crt", b"PEM", 0o644),
            VolumeFile("namespace", b"jobs", 0o644),
        ),
        read_only=True,
    )
    assert token_requests({"spec": {"volumes": [API_ACCESS]}}) == [
        TokenRequest("kube-api-access-x", "token", None, 3607)
    ]


def test_a_token_without_expiration_asks_for_the_kubelet_default():
    volume = {
        "name": "t",
        "projected": {"sources": [{"serviceAccountToken": {"path": "tok", "audience": "vault"}}]},
    }
    assert token_requests({"spec": {"volumes": [volume]}}) == [
        TokenRequest("t", "tok", "vault", DEFAULT_TOKEN_SECONDS)
    ]  # fmt: skip


def test_config_map_items_modes_and_secret_volumes():
    volume = {
        "name": "conf",
        "configMap": {"name": "c", "items": [{"key": "k", "path": "sub/f", "mode": 0o600}]},
    }
    plan = plan_volume(volume, FACTS, {("ConfigMap", "c"): {"k": b"v", "other": b"x"}}, {})
    assert plan.files == (VolumeFile("sub/f", b"v", 0o600),)
    secret = {"name": "s", "secret": {"secretName": "creds", "defaultMode": 0o400}}
    plan = plan_volume(secret, FACTS, {("Secret", "creds"): {"b": b"2", "a": b"1"}}, {})
    assert plan.files == (VolumeFile("a", b"1", 0o400), VolumeFile("b", b"2", 0o400))
    assert plan.read_only


def test_a_missing_object_keeps_the_pod_creating_unless_optional():
    volume = {"name": "conf", "configMap": {"name": "spark-drv-conf-map"}}
    with pytest.raises(VolumeNotReady, match='configmap "spark-drv-conf-map" not found'):
        plan_volume(volume, FACTS, {("ConfigMap", "spark-drv-conf-map"): None}, {})
    optional = {"name": "conf", "configMap": {"name": "x", "optional": True}}
    assert plan_volume(optional, FACTS, {("ConfigMap", "x"): None}, {}).files == ()
    item = {"name": "conf", "configMap": {"name": "c", "items": [{"key": "nope", "path": "f"}]}}
    with pytest.raises(VolumeNotReady, match="non-existent config key: nope"):
        plan_volume(item, FACTS, {("ConfigMap", "c"): {"k": b"v"}}, {})


def test_paths_may_not_leave_the_volume():
    volume = {
        "name": "conf",
        "configMap": {"name": "c", "items": [{"key": "k", "path": "../etc/passwd"}]},
    }
    with pytest.raises(VolumeNotReady, match="invalid path"):
        plan_volume(volume, FACTS, {("ConfigMap", "c"): {"k": b"v"}}, {})


def test_downward_api_labels_empty_dir_and_host_path():
    downward = {
        "name": "info",
        "downwardAPI": {
            "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
        },
    }
    assert plan_volume(downward, FACTS, {}, {}).files == (VolumeFile("labels", b'a="1"\nb="2"'),)
    assert plan_volume({"name": "scratch", "emptyDir": {}}, FACTS, {}, {}) == VolumePlan(
        "scratch", "directory"
    )
    host = plan_volume({"name": "h", "hostPath": {"path": "/data"}}, FACTS, {}, {})
    assert host == VolumePlan("h", "host", host_path="/data")


def test_unsupported_volume_types_say_which_are_supported():
    with pytest.raises(
        VolumeNotReady, match=r"type persistentVolumeClaim is not supported.*configMap"
    ):
        plan_volume({"name": "data", "persistentVolumeClaim": {"claimName": "c"}}, FACTS, {}, {})


def test_mounts_are_ordered_parents_first_and_inherit_read_only():
    volumes = {
        "conf": VolumePlan("conf", "files", read_only=True),
        "local": VolumePlan("local", "directory"),
    }
    container = {
        "name": "c",
        "volumeMounts": [
            {"name": "local", "mountPath": "/opt/spark/work-dir/x", "subPath": "a/b"},
            {"name": "conf", "mountPath": "/opt/spark/conf"},
            {"name": "local", "mountPath": "/var/data/spark-1", "readOnly": True},
        ],
    }
    assert plan_mounts(container, volumes) == [
        Mount("conf", "", "/opt/spark/conf", True),
        Mount("local", "", "/var/data/spark-1", True),
        Mount("local", "a/b", "/opt/spark/work-dir/x", False),
    ]


def test_a_mount_of_an_unknown_volume_is_a_config_error():
    with pytest.raises(ContainerConfigError, match="volumeMount nope names no volume"):
        plan_mounts({"name": "c", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}, {})
