"""Env resolution as a kubelet does it (testenv/nodeagent/env.py), on plain pod dicts."""

from __future__ import annotations

import base64

import pytest

from testenv.nodeagent.env import (
    ContainerConfigError,
    PodFacts,
    expand,
    object_data,
    referenced_objects,
    resolve_env,
)

POD = {
    "metadata": {
        "name": "app-driver",
        "namespace": "jobs",
        "uid": "u-1",
        "labels": {"spark-role": "driver", "app": "pi"},
        "annotations": {"note": "x"},
    },
    "spec": {"nodeName": "process-node-0", "serviceAccountName": "spark", "containers": []},
}
FACTS = PodFacts(POD, pod_ip="127.1.2.10", host_ip="127.1.2.1", node_allocatable={"cpu": "16"})


def container(env=None, env_from=None, resources=None):
    return {
        "name": "main",
        "env": env or [],
        "envFrom": env_from or [],
        "resources": resources or {},
    }


def field(path):
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


def test_field_refs_read_the_pod_and_the_addresses_the_agent_gave_it():
    env = resolve_env(
        container(
            [
                {"name": "IP", **field("status.podIP")},
                {"name": "HOST", **field("status.hostIP")},
                {"name": "NAME", **field("metadata.name")},
                {"name": "NS", **field("metadata.namespace")},
                {"name": "ROLE", **field("metadata.labels['spark-role']")},
                {"name": "SA", **field("spec.serviceAccountName")},
            ]
        ),
        FACTS,
        {},
    )
    assert env == {
        "IP": "127.1.2.10",
        "HOST": "127.1.2.1",
        "NAME": "app-driver",
        "NS": "jobs",
        "ROLE": "driver",
        "SA": "spark",
    }


def test_an_unknown_field_path_is_a_config_error():
    with pytest.raises(ContainerConfigError, match=r"unsupported fieldPath: status\.nothing"):
        resolve_env(container([{"name": "X", **field("status.nothing")}]), FACTS, {})


def test_key_refs_read_configmaps_and_secrets_and_name_what_is_missing():
    objects = {
        ("ConfigMap", "conf"): {"mode": b"fast"},
        ("Secret", "creds"): {"password": b"s3cret"},
    }
    ref = {"valueFrom": {"configMapKeyRef": {"name": "conf", "key": "mode"}}}
    secret = {"valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}
    env = resolve_env(
        container([{"name": "MODE", **ref}, {"name": "PW", **secret}]), FACTS, objects
    )
    assert env == {"MODE": "fast", "PW": "s3cret"}

    missing = {"valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}}
    with pytest.raises(ContainerConfigError, match=r'^secret "absent" not found$'):
        resolve_env(container([{"name": "X", **missing}]), FACTS, {("Secret", "absent"): None})
    no_key = {"valueFrom": {"configMapKeyRef": {"name": "conf", "key": "other"}}}
    with pytest.raises(
        ContainerConfigError, match="couldn't find key other in ConfigMap jobs/conf"
    ):
        resolve_env(container([{"name": "X", **no_key}]), FACTS, objects)


def test_optional_refs_that_miss_leave_the_variable_out():
    optional = {"valueFrom": {"secretKeyRef": {"name": "absent", "key": "k", "optional": True}}}
    env = resolve_env(container([{"name": "X", **optional}]), FACTS, {("Secret", "absent"): None})
    assert env == {}


def test_env_from_applies_prefixes_skips_invalid_names_and_env_wins():
    objects = {("ConfigMap", "conf"): {"a": b"1", "bad key": b"2", "b": b"3"}}
    env = resolve_env(
        container(
            [{"name": "P_b", "value": "from env"}],
            [{"prefix": "P_", "configMapRef": {"name": "conf"}}],
        ),
        FACTS,
        objects,
    )
    assert env == {"P_a": "1", "P_b": "from env"}


def test_values_expand_earlier_variables_and_service_variables():
    env = resolve_env(
        container(
            [
                {"name": "A", "value": "x"},
                {"name": "B", "value": "$(A)-$(KUBERNETES_SERVICE_HOST)-$(UNDEFINED)-$$(A)"},
            ]
        ),
        FACTS,
        {},
        {"KUBERNETES_SERVICE_HOST": "127.1.2.2"},
    )
    assert env["B"] == "x-127.1.2.2-$(UNDEFINED)-$(A)"
    assert env["KUBERNETES_SERVICE_HOST"] == "127.1.2.2"


def test_expand_leaves_an_unclosed_reference_and_a_trailing_dollar():
    assert expand("$(A", {"A": "1"}) == "$(A"
    assert expand("cost: 5$", {}) == "cost: 5$"


def test_resource_field_refs_use_limits_requests_or_the_node_and_round_up():
    resources = {"limits": {"memory": "896Mi"}, "requests": {"cpu": "500m"}}
    env = resolve_env(
        container(
            [
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
                {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            ],
            resources=resources,
        ),
        FACTS,
        {},
    )  # fmt: skip
    assert env == {"MEM": "896", "CPU": "1", "CPU_LIMIT": "16"}


def test_referenced_objects_cover_env_env_from_and_volumes():
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "envFrom": [{"secretRef": {"name": "s1"}}],
                    "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c1", "key": "k"}}}],
                }
            ],
            "volumes": [
                {"name": "v1", "configMap": {"name": "c2"}},
                {"name": "v2", "secret": {"secretName": "s2"}},
                {"name": "v3", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}},
            ],
        }
    }  # fmt: skip
    assert referenced_objects(pod) == {
        ("Secret", "s1"), ("ConfigMap", "c1"), ("ConfigMap", "c2"), ("Secret", "s2"),
        ("ConfigMap", "kube-root-ca.crt"),
    }  # fmt: skip


def test_object_data_decodes_secrets_and_binary_data():
    secret = {"data": {"k": base64.b64encode(b"v").decode()}}
    config_map = {"data": {"t": "text"}, "binaryData": {"b": base64.b64encode(b"\x00").decode()}}
    assert object_data("Secret", secret) == {"k": b"v"}
    assert object_data("ConfigMap", config_map) == {"t": b"text", "b": b"\x00"}
