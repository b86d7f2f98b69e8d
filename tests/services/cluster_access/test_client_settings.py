"""spark-submit's client settings: the kubeconfig base, then the Spark conf's keys over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import KubeConfigError, SparkConfError
from airflow_provider_sparkk8s.services.cluster_access.client_settings import spark_submit_settings
from tests.support.kubeconfig import SECRET, two_context_config, write_config


def test_spark_submit_keys_override_the_kubeconfig(tmp_path: Path) -> None:
    env = {
        "KUBECONFIG": str(write_config(tmp_path, two_context_config(tmp_path))),
        "HOME": str(tmp_path),
    }
    files = {}
    for name in ("ca", "key", "cert", "token"):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_text(name)
    prefix = "spark.kubernetes.authenticate.submission"
    conf = {
        "spark.master": "k8s://127.0.0.1:6443",
        "spark.kubernetes.context": "robot",
        f"{prefix}.caCertFile": str(files["ca"]),
        f"{prefix}.clientKeyFile": str(files["key"]),
        f"{prefix}.clientCertFile": str(files["cert"]),
        f"{prefix}.oauthTokenFile": str(files["token"]),
        "spark.kubernetes.namespace": "jobs",
        "spark.kubernetes.submission.requestTimeout": "2500",
    }
    settings = spark_submit_settings(conf, env)
    assert settings.server == "https://127.0.0.1:6443"
    assert settings.ca_file == str(files["ca"]) and settings.ca_data is None
    assert settings.client_key_file == str(files["key"])
    assert settings.client_cert_file == str(files["cert"])
    assert settings.token_file == str(files["token"]) and settings.token is None  # robot's token
    assert settings.tls_server_name == "kubernetes"  # kept from the kubeconfig cluster
    assert settings.namespace == "jobs" and settings.verify and settings.request_timeout == 2.5
    trusting = spark_submit_settings(
        {
            "spark.master": "k8s://h:1",
            "spark.kubernetes.trust.certificates": "true",
            f"{prefix}.oauthToken": SECRET,
        },
        {"HOME": str(tmp_path / "none")},
    )
    assert not trusting.verify and trusting.token == SECRET and trusting.source == "spark conf"


def test_spark_submit_unreadable_file_names_key_and_path(tmp_path: Path) -> None:
    key = "spark.kubernetes.authenticate.submission.clientKeyFile"
    conf = {"spark.master": "k8s://h:1", key: str(tmp_path / "absent.key")}
    with pytest.raises(SparkConfError) as caught:
        spark_submit_settings(conf, {"HOME": str(tmp_path)})
    assert caught.value.key == key and str(tmp_path / "absent.key") in str(caught.value)


def test_spark_submit_token_and_token_file_conflict(tmp_path: Path) -> None:
    prefix = "spark.kubernetes.authenticate.submission"
    (tmp_path / "t").write_text("x")
    conf = {
        "spark.master": "k8s://h:1",
        f"{prefix}.oauthToken": SECRET,
        f"{prefix}.oauthTokenFile": str(tmp_path / "t"),
    }
    with pytest.raises(SparkConfError) as caught:
        spark_submit_settings(conf, {"HOME": str(tmp_path)})
    assert SECRET not in str(caught.value)


def test_spark_submit_missing_context_is_an_error(tmp_path: Path) -> None:
    conf = {"spark.master": "k8s://h:1", "spark.kubernetes.context": "ghost"}
    with pytest.raises(KubeConfigError, match="ghost"):
        spark_submit_settings(conf, {"HOME": str(tmp_path)})
