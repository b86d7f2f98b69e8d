"""EnvSecretsFeatureStep: each `spark.kubernetes.driver.secretKeyRef.<ENV>=<secret>:<key>`
becomes an env var read from an existing Secret; a value the API server would refuse is a
SparkConfError naming the key before anything is created."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import env_secrets
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import make_conf

PREFIX = "spark.kubernetes.driver.secretKeyRef."


def test_each_entry_becomes_a_secret_key_ref_env_var() -> None:
    conf = make_conf({PREFIX + "DB_PASSWORD": "db-credentials:password"})
    result = env_secrets.step(conf, SparkPod.initial())
    assert result.pod.container["env"] == [
        {
            "name": "DB_PASSWORD",
            "valueFrom": {"secretKeyRef": {"key": "password", "name": "db-credentials"}},
        }
    ]
    assert result.pod.pod == SparkPod.initial().pod and result.resources == ()


def test_no_entries_change_nothing() -> None:
    assert env_secrets.step(make_conf(), SparkPod.initial()).pod == SparkPod.initial()


@pytest.mark.parametrize(
    ("env_name", "value", "hint"),
    [
        ("DB", "db-credentials", "expected <secret name>:<key>"),
        ("DB", "a:b:c", "expected <secret name>:<key>"),
        ("DB", "Not_DNS:password", "the Secret name is not a DNS name"),
        ("DB", "db:pass word", "a Secret key is made of letters"),
    ],
)
def test_a_value_the_api_server_would_refuse_names_the_key(
    env_name: str, value: str, hint: str
) -> None:
    with pytest.raises(SparkConfError, match=hint) as raised:
        env_secrets.step(make_conf({PREFIX + env_name: value}), SparkPod.initial())
    assert (raised.value.key, raised.value.value) == (PREFIX + env_name, value)


def test_runs_from_spark_2_4_under_sparks_class_name() -> None:
    assert env_secrets.STEP.name == "org.apache.spark.deploy.k8s.features.EnvSecretsFeatureStep"
    assert env_secrets.STEP.since == (2, 4, 0)
