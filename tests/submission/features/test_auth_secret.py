"""The auth-secret step: off by default; when enabled, a Secret holding the drawn secret (and
its base64 for the executors' env) sent before the driver, mounted read-only, and the file key
and the executors' secret reference in the driver's properties, with no literal anywhere."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import APP_ID_LABEL
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.features import auth_secret
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, IDS, make_conf

DRAWN = "c2VjcmV0LWRyYXduLWZvci10aGlzLWFwcA"
ENABLED = {auth_secret.ENABLED_KEY: "true"}


def enabled_conf(drawn: str) -> DriverConf:
    return dataclasses.replace(make_conf(ENABLED), ids=dataclasses.replace(IDS, auth_secret=drawn))


def test_off_by_default_changes_nothing() -> None:
    result = auth_secret.step(make_conf(), SparkPod.initial())
    assert result.pod == SparkPod.initial()
    assert result.system_properties == {} and result.pre_resources == ()


def test_enabled_sends_the_secret_before_the_driver_and_mounts_it_read_only() -> None:
    result = auth_secret.step(enabled_conf(DRAWN), SparkPod.initial())
    name = f"{APP_ID}-auth"
    file_value = base64.b64encode(DRAWN.encode()).decode()
    assert result.pre_resources == (
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "labels": {APP_ID_LABEL: APP_ID}},
            "immutable": True,
            "type": "Opaque",
            "data": {
                "spark-auth-secret": file_value,
                "spark-auth-secret-base64": base64.b64encode(file_value.encode()).decode(),
            },
        },
    )
    assert result.pod.pod["spec"]["volumes"] == [
        {
            "name": "spark-auth-secret",
            "secret": {
                "secretName": name,
                "items": [{"key": "spark-auth-secret", "path": "spark-auth-secret"}],
            },
        }
    ]
    assert result.pod.container["volumeMounts"] == [
        {"name": "spark-auth-secret", "mountPath": "/opt/spark/auth-secret", "readOnly": True}
    ]
    assert result.system_properties == {
        "spark.authenticate.secret.file": "/opt/spark/auth-secret/spark-auth-secret",
        "spark.kubernetes.executor.secretKeyRef._SPARK_AUTH_SECRET": (
            f"{name}:spark-auth-secret-base64"
        ),
    }
    shown = json.dumps([result.pod.pod, result.pod.container, result.system_properties])
    assert DRAWN not in shown and file_value not in shown


def test_enabled_without_a_drawn_secret_is_refused_naming_the_key() -> None:
    with pytest.raises(SparkConfError) as raised:
        auth_secret.step(enabled_conf(""), SparkPod.initial())
    assert raised.value.key == auth_secret.ENABLED_KEY
    assert "SubmissionIds.auth_secret is empty" in str(raised.value)
