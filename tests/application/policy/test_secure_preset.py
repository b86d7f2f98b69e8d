"""The secure preset (application/policy/secure_preset.py) on rendered submissions, through
services.submit.submission.plan as the operator and the CLI plan: what it pins per Spark line, what
it sends (the Secret, the mounts, the NetworkPolicy, restricted pods), where the secret is
and is not, and what it refuses, each refusal naming the key, the value and the preset."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from airflow_provider_sparkk8s.application.policy import secure_preset
from airflow_provider_sparkk8s.application.policy.guardrails import apply_pins
from airflow_provider_sparkk8s.application.policy.platform_policy import parse_policy
from airflow_provider_sparkk8s.errors import PolicyViolation
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from airflow_provider_sparkk8s.submission.features import auth_secret
from tests.support.driver_conf import IDS

SECRET = "9f" * 32  # what naming.new_submission_ids would draw
SECURE_IDS = dataclasses.replace(IDS, auth_secret=SECRET)
PI = "local:///opt/spark/examples/src/main/python/pi.py"
SECURE = parse_policy({"preset": "secure"}, "connection 'k8s' (extra policy)")
LINES = ("3.5.1", "3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")


def plan(
    conf: Mapping[str, str] | None = None,
    version: str = "4.3.0",
    policy: Any = SECURE,
    **kwargs: Any,
) -> submission.Planned:
    argv = ["--master", "k8s://https://192.0.2.1:6443", "--deploy-mode", "cluster",
            "--name", "pi"]  # fmt: skip
    every = {"spark.kubernetes.container.image": f"apache/spark:{version}", **(conf or {})}
    for key, value in every.items():
        argv += ["--conf", f"{key}={value}"]
    request = submission.SubmissionRequest([*argv, PI], environ={}, cwd="/")
    arguments = submission.parse(request, clock_ms=lambda: 1_700_000_000_000)
    return submission.plan(
        arguments, spark_version=version, environ={}, ids=SECURE_IDS, policy=policy, **kwargs
    )


def kinds(planned: submission.Planned) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for obj in planned.rendered.objects:
        found.setdefault(obj["kind"], []).append(obj)
    return found


def properties(planned: submission.Planned) -> dict[str, str]:
    (conf_map,) = (
        o for o in kinds(planned)["ConfigMap"] if "spark.properties" in o.get("data", {})
    )
    return load_java_properties(conf_map["data"]["spark.properties"])


def executor_template(planned: submission.Planned) -> dict[str, Any]:
    (template_map,) = (
        o for o in kinds(planned)["ConfigMap"] if "podspec-configmap-key" in o.get("data", {})
    )
    return yaml.safe_load(template_map["data"]["podspec-configmap-key"])


@pytest.mark.parametrize("version", LINES)
def test_authentication_and_encryption_are_on_with_gcm_where_the_line_has_it(
    version: str,
) -> None:
    props = properties(plan(version=version))
    assert props["spark.authenticate"] == "true"
    assert props["spark.network.crypto.enabled"] == "true"
    assert props["spark.network.crypto.saslFallback"] == "false"
    assert props["spark.io.encryption.enabled"] == "true"
    gcm = version != "3.5.1"  # SPARK-47172 reached the 3.5 line in 3.5.2
    assert props.get("spark.network.crypto.cipher") == ("AES/GCM/NoPadding" if gcm else None)
    assert props.get("spark.network.crypto.authEngineVersion") == ("2" if gcm else None)


@pytest.mark.parametrize("version", LINES)
def test_the_secret_is_in_the_secret_only(version: str) -> None:
    planned = plan(version=version)
    (secret,) = kinds(planned)["Secret"]
    assert secret in planned.rendered.pre_resources  # created before the pod, then owned
    name = f"{IDS.app_id}-auth"
    assert secret["metadata"]["name"] == name and secret["immutable"] is True
    assert base64.b64decode(secret["data"]["spark-auth-secret"]).decode() == SECRET
    # The executors' env: what Spark derives from the file's bytes (Base64), so keys agree.
    executors = base64.b64decode(secret["data"]["spark-auth-secret-base64"]).decode()
    assert executors == base64.b64encode(SECRET.encode()).decode()
    others = [o for o in planned.rendered.objects if o is not secret]
    assert SECRET not in json.dumps(others) and executors not in json.dumps(others)
    assert SECRET not in json.dumps(planned.spark_conf)
    assert SECRET not in json.dumps(submission.dry_run(planned).objects)
    props = properties(planned)
    path = "/opt/spark/auth-secret/spark-auth-secret"
    assert props["spark.authenticate.secret.file"] == path
    assert "spark.authenticate.secret.driver.file" not in props  # falls back to it
    assert props["spark.kubernetes.executor.secretKeyRef._SPARK_AUTH_SECRET"] == (
        f"{name}:spark-auth-secret-base64"
    )
    pod = planned.rendered.driver_pod
    items = [{"key": "spark-auth-secret", "path": "spark-auth-secret"}]
    assert {"name": "spark-auth-secret", "secret": {"secretName": name, "items": items}} in (
        pod["spec"]["volumes"]
    )
    (container,) = pod["spec"]["containers"]
    assert {"name": "spark-auth-secret", "mountPath": "/opt/spark/auth-secret",
            "readOnly": True} in container["volumeMounts"]  # fmt: skip


@pytest.mark.parametrize("version", LINES)
def test_one_executor_network_policy_on_every_line(version: str) -> None:
    (policy,) = kinds(plan(version=version))["NetworkPolicy"]
    assert policy["metadata"]["name"].endswith("-policy")
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "spark-role": "executor",
        "spark-app-selector": IDS.app_id,
    }
    if version < "4.2":  # ours: absent without the preset, as spark-submit sends none
        assert "NetworkPolicy" not in kinds(plan(version=version, policy=None))


RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.mark.parametrize("version", ["3.5.9", "4.3.0"])
def test_driver_and_executors_get_the_restricted_security_context(version: str) -> None:
    planned = plan(version=version)
    spec = planned.rendered.driver_pod["spec"]
    assert spec["securityContext"] == RESTRICTED_POD
    assert spec["containers"][0]["securityContext"] == RESTRICTED_CONTAINER
    template = executor_template(planned)
    assert template["spec"]["securityContext"] == RESTRICTED_POD
    assert template["spec"]["containers"] == [
        {"name": "spark-kubernetes-executor", "securityContext": RESTRICTED_CONTAINER}
    ]
    assert properties(planned)["spark.kubernetes.executor.podTemplateFile"] == (
        "/opt/spark/pod-template/pod-spec-template.yml"
    )


def test_templates_keep_what_they_say_and_get_what_they_leave_out() -> None:
    driver = {"spec": {"securityContext": {"runAsUser": 185, "fsGroup": 185},
                       "initContainers": [{"name": "init", "image": "busybox"}]}}  # fmt: skip
    executor = {"metadata": {"labels": {"team": "a"}},
                "spec": {"containers": [{"name": "spark", "securityContext": {
                    "capabilities": {"drop": ["NET_RAW"]}}}]}}  # fmt: skip
    planned = plan(driver_pod_template=driver, executor_pod_template=executor)
    spec = planned.rendered.driver_pod["spec"]
    assert spec["securityContext"] == {"runAsUser": 185, "fsGroup": 185, **RESTRICTED_POD}
    assert spec["initContainers"][0]["securityContext"] == RESTRICTED_CONTAINER
    template = executor_template(planned)
    assert template["metadata"] == {"labels": {"team": "a"}}
    assert template["spec"]["containers"][0]["securityContext"] == {
        "capabilities": {"drop": ["NET_RAW", "ALL"]},
        "allowPrivilegeEscalation": False,
    }


def refused(**kwargs: Any) -> list[tuple[str, str, str]]:
    with pytest.raises(PolicyViolation) as caught:
        plan(**kwargs)
    assert "connection 'k8s' (extra policy)" in str(caught.value)
    return caught.value.violations


def test_turning_a_pinned_key_off_is_refused_naming_the_preset() -> None:
    found = refused(conf={"spark.io.encryption.enabled": "false"})
    assert found == [
        ("spark.io.encryption.enabled", "false",
         "preset secure: spark.io.encryption.enabled='true'"),
    ]  # fmt: skip
    found = refused(conf={"spark.network.crypto.cipher": "AES/CTR/NoPadding"}, version="3.5.9")
    assert found[0][0] == "spark.network.crypto.cipher"


def test_a_literal_secret_is_refused_and_not_shown() -> None:
    found = refused(conf={"spark.authenticate.secret": "hunter2"})
    assert found == [
        ("spark.authenticate.secret", "*********(redacted)",
         "preset secure: denied 'spark.authenticate.secret' (the preset draws the secret)"),
    ]  # fmt: skip
    found = refused(conf={"spark.authenticate.secret.executor.file": "/etc/mine"})
    assert found[0][0] == "spark.authenticate.secret.executor.file"


def test_the_policy_own_pin_wins_over_the_preset() -> None:
    policy = parse_policy(
        {"preset": "secure", "pinned": {"spark.io.encryption.enabled": "false"}}, "file p"
    )
    assert properties(plan(policy=policy))["spark.io.encryption.enabled"] == "false"
    conf = apply_pins(policy, {}, "4.3.0")
    assert conf["spark.io.encryption.enabled"] == "false" and conf["spark.authenticate"] == "true"


def test_what_breaks_the_restricted_profile_is_refused() -> None:
    driver = {"spec": {"hostNetwork": True, "containers": [
        {"name": "proxy", "image": "envoy", "securityContext": {"privileged": True}}]}}  # fmt: skip
    executor = {"spec": {"securityContext": {"runAsNonRoot": False},
                         "volumes": [{"name": "host", "hostPath": {"path": "/"}}]}}  # fmt: skip
    found = refused(driver_pod_template=driver, executor_pod_template=executor)
    assert ("driver pod", "spec.hostNetwork: true", "preset secure: restricted pods") in found
    assert ("driver pod", "container 'proxy' privileged: true",
            "preset secure: restricted pods") in found  # fmt: skip
    assert ("executor pod template", "volume 'host': hostPath",
            "preset secure: restricted pods") in found  # fmt: skip
    assert ("executor pod template", "spec.securityContext runAsNonRoot: false",
            "preset secure: restricted pods") in found  # fmt: skip


@pytest.mark.parametrize(
    ("conf", "key"),
    [
        ({"spark.kubernetes.driver.pod.excludedFeatureSteps":
          "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep"},
         "spark.kubernetes.driver.pod.excludedFeatureSteps"),
        ({"spark.kubernetes.executor.securityContext.allowPrivilegeEscalation": "true"},
         "spark.kubernetes.executor.securityContext.allowPrivilegeEscalation"),
    ],
)  # fmt: skip
def test_dropping_what_the_preset_sends_is_refused(conf: dict[str, str], key: str) -> None:
    assert key in [k for k, _, _ in refused(conf=conf)]


def test_without_the_preset_nothing_changes() -> None:
    """The preset off: the same objects as a policy-free plan, and no preset key at all."""
    plain = plan(policy=None)
    with_other_rules = plan(policy=parse_policy({"max_executors": 9}, "s"))
    assert plain.rendered == with_other_rules.rendered
    assert not set(secure_preset.pins("4.3.0")) & set(plain.spark_conf)
    assert "Secret" not in kinds(plain) and auth_secret.FILE_KEY not in properties(plain)
