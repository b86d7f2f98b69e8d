import base64

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import driver_kubernetes_credentials as creds
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import PREFIX, make_conf

P = "spark.kubernetes.authenticate.driver"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_service_account_without_shipped_credentials():
    result = creds.step(make_conf({f"{P}.serviceAccountName": "spark"}), SparkPod.initial())
    assert result.pod.pod["spec"] == {"serviceAccount": "spark", "serviceAccountName": "spark"}
    assert result.resources == ()
    assert result.system_properties == {}


def test_nothing_configured_changes_nothing():
    result = creds.step(make_conf(), SparkPod.initial())
    assert result.pod == SparkPod.initial()
    assert result.resources == () and result.system_properties == {}


def test_shipped_credentials_make_a_secret_and_ignore_the_service_account():
    local = LocalInputs(files={"/k/ca.crt": b"CA", "/k/client.key": b"KEY"}, spark_user="alice")
    conf = make_conf(
        {
            f"{P}.caCertFile": "/k/ca.crt",
            f"{P}.clientKeyFile": "/k/client.key",
            f"{P}.oauthToken": "s3cr3t",
            f"{P}.serviceAccountName": "ignored",
            "spark.kubernetes.authenticate.submission.oauthToken": "other",
            f"{P}.mounted.clientCertFile": "/in/pod/cert",
        },
        local=local,
    )
    result = creds.step(conf, SparkPod.initial())
    secret = result.resources[0]
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{PREFIX}-kubernetes-credentials"},
        "data": {"client-key": b64(b"KEY"), "ca-cert": b64(b"CA"), "oauth-token": b64(b"s3cr3t")},
        "immutable": True,
    }
    assert list(secret["data"]) == ["client-key", "ca-cert", "oauth-token"]
    spec = result.pod.pod["spec"]
    assert "serviceAccountName" not in spec
    assert spec["volumes"] == [
        {
            "name": "kubernetes-credentials",
            "secret": {"secretName": f"{PREFIX}-kubernetes-credentials"},
        }
    ]
    assert result.pod.container["volumeMounts"] == [
        {"name": "kubernetes-credentials", "mountPath": "/mnt/secrets/spark-kubernetes-credentials"}
    ]
    m = "/mnt/secrets/spark-kubernetes-credentials"
    assert result.system_properties == {
        f"{P}.oauthToken": "<present_but_redacted>",
        "spark.kubernetes.authenticate.submission.oauthToken": "<present_but_redacted>",
        f"{P}.mounted.caCertFile": f"{m}/ca-cert",
        f"{P}.mounted.clientKeyFile": f"{m}/client-key",
        f"{P}.mounted.clientCertFile": "/in/pod/cert",
        f"{P}.mounted.oauthTokenFile": f"{m}/oauth-token",
    }


def test_unreadable_credential_file_names_the_key():
    with pytest.raises(SparkConfError) as err:
        creds.step(make_conf({f"{P}.clientCertFile": "/nope"}), SparkPod.initial())
    assert err.value.key == f"{P}.clientCertFile"
    assert err.value.value == "/nope"


def test_token_value_never_in_error_or_properties():
    conf = make_conf({f"{P}.oauthToken": "tok-123"})
    result = creds.step(conf, SparkPod.initial())
    assert "tok-123" not in repr(result.system_properties)
