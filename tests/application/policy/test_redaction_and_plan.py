"""Dry-run redaction, and the Kubernetes and identity keys laid over the parsed conf."""

from __future__ import annotations

import re

import pytest

from airflow_provider_sparkk8s.application.policy.redaction import (
    REDACTED,
    redact_objects,
    redaction_pattern,
)
from airflow_provider_sparkk8s.application.task.submission_plan import (
    KubernetesParameters,
    namespace_of,
    submission_conf,
    template_dict,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.errors import SparkConfError

REF = TaskInstanceRef("etl", "load", "manual__1")


def test_properties_env_and_secret_objects_are_redacted_in_a_copy():
    objects = [
        {"kind": "ConfigMap", "data": {"spark.properties": "spark.a=1\nspark.s3.secret.key=abc\n#token=x\n", "log4j2.properties": "x=token"}},
        {"kind": "Pod", "spec": {"containers": [{"env": [{"name": "DB_PASSWORD", "value": "p"}, {"name": "HOME", "value": "/h"}]}]}},
        {"kind": "Secret", "data": {"token": "dG9r"}},
    ]  # fmt: skip
    redacted = redact_objects(objects, redaction_pattern({}))
    assert (
        redacted[0]["data"]["spark.properties"]
        == f"spark.a=1\nspark.s3.secret.key={REDACTED}\n#token=x\n"
    )
    assert redacted[0]["data"]["log4j2.properties"] == f"x={REDACTED}"  # the value matched
    assert redacted[1]["spec"]["containers"][0]["env"] == [
        {"name": "DB_PASSWORD", "value": REDACTED}, {"name": "HOME", "value": "/h"}]  # fmt: skip
    assert redacted[2]["data"] == {"token": REDACTED}
    assert objects[2]["data"] == {"token": "dG9r"}  # inputs untouched


def test_the_users_redaction_regex_is_honoured():
    pattern = redaction_pattern({"spark.redaction.regex": "(?i)mykey"})
    assert pattern.search("spark.mykey") and not pattern.search("spark.password")


def test_hadoop_azures_account_keys_are_masked_whatever_the_users_regex():
    """Spark's default pattern misses `fs.azure.account.key.<host>`; a dry run masks it."""
    for conf in ({}, {"spark.redaction.regex": "(?i)mykey"}):
        pattern = redaction_pattern(conf)
        assert pattern.search("spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net")
        assert not pattern.search("spark.hadoop.fs.azure.account.auth.type")


def test_kubernetes_parameters_win_and_identity_labels_and_pod_name_are_added():
    parsed = {"spark.app.name": "Load Job", "spark.kubernetes.namespace": "from-conf",
              "spark.kubernetes.container.image": "conf/image:1"}  # fmt: skip
    conf = submission_conf(parsed, KubernetesParameters("team-a", image="explicit/image:2"), REF, 3)
    assert conf["spark.kubernetes.namespace"] == "team-a"
    assert conf["spark.kubernetes.container.image"] == "explicit/image:2"
    assert conf["spark.kubernetes.driver.label.sparkk8s.io/submission"] == "3"
    assert re.fullmatch(r"load-job-[0-9a-f]{10}-3-driver", conf["spark.kubernetes.driver.pod.name"])


def test_a_pod_name_the_user_set_is_kept():
    parsed = {"spark.kubernetes.driver.pod.name": "mine", "spark.kubernetes.container.image": "i"}
    assert (
        submission_conf(parsed, KubernetesParameters("ns"), REF, 2)[
            "spark.kubernetes.driver.pod.name"
        ]
        == "mine"
    )


def test_no_image_anywhere_is_refused():
    with pytest.raises(SparkConfError) as error:
        submission_conf({}, KubernetesParameters("ns"), REF, 1)
    assert error.value.key == "image"


def test_templates_as_paths_go_to_conf_and_dicts_to_the_pipeline():
    conf = submission_conf(
        {}, KubernetesParameters("ns", "i", "/t/driver.yaml", {"kind": "Pod"}), REF, 1
    )
    assert conf["spark.kubernetes.driver.podTemplateFile"] == "/t/driver.yaml"
    assert "spark.kubernetes.executor.podTemplateFile" not in conf
    assert template_dict("executor_pod_template", {"kind": "Pod", "spec": {}}) == {
        "kind": "Pod",
        "spec": {},
    }
    assert template_dict("driver_pod_template", "/t/driver.yaml") is None
    with pytest.raises(SparkConfError):
        template_dict("driver_pod_template", {"kind": "Deployment"})
    with pytest.raises(SparkConfError):
        template_dict("driver_pod_template", 42)  # type: ignore[arg-type]


def test_namespace_comes_from_the_parameter_then_conf_else_the_connection():
    assert namespace_of("a", {"spark.kubernetes.namespace": "b"}) == "a"
    assert namespace_of(None, {"spark.kubernetes.namespace": "b"}) == "b"
    assert namespace_of(None, {}) is None
