"""SparkK8sHook: connection fields -> ClientSettings (precedence, parsing) and namespaces."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook, settings_from_connection

SECRET = "planted-hook-secret-93be1"
KEY_PEM = f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n"


def kubeconfig(tmp_path: Path, namespace: str | None = "ctx-ns") -> dict:
    context = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    return {
        "current-context": "main",
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": "https://kube:6443", "certificate-authority": "ca.crt"},
            },
            {"name": "other", "cluster": {"server": "https://other:6443"}},
        ],
        "users": [{"name": "u", "user": {"token": SECRET}}],
        "contexts": [
            {"name": "main", "context": context},
            {"name": "second", "context": {"cluster": "other", "user": "u"}},
        ],
    }


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_explicit_server_and_token() -> None:
    settings = settings_from_connection("c", "https://10.1.1.1:6443", None, {"token": SECRET})
    assert settings.server == "https://10.1.1.1:6443" and settings.token == SECRET
    assert settings.source == "connection 'c'"
    assert SECRET not in repr(settings)


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("10.1.1.1", 6443, "https://10.1.1.1:6443"),
        ("http://127.0.0.1:8080", None, "http://127.0.0.1:8080"),
        ("https://kube/", 443, "https://kube:443"),
    ],
)
def test_host_and_port_become_the_server_url(host: str, port: int | None, url: str) -> None:
    assert settings_from_connection("c", host, port, {"token": "t"}).server == url


def test_kubeconfig_path_with_context_and_explicit_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, "config", yaml.safe_dump(kubeconfig(tmp_path)))
    token_file = write(tmp_path, "token", "file-token")
    settings = settings_from_connection(
        "c",
        None,
        None,
        {"kube_config_path": path, "cluster_context": "second", "token_file": token_file},
    )
    assert settings.server == "https://other:6443"
    assert settings.token_file == token_file and settings.token is None  # explicit wins
    assert settings.source == f"kubeconfig {path}, context 'second' + connection 'c'"


def test_host_overrides_the_kubeconfig_server(tmp_path: Path) -> None:
    path = write(tmp_path, "config", yaml.safe_dump(kubeconfig(tmp_path)))
    settings = settings_from_connection("c", "https://proxy:443", None, {"kube_config_path": path})
    assert settings.server == "https://proxy:443" and settings.token == SECRET
    assert settings.ca_file == str(tmp_path / "ca.crt")


def test_inline_kubeconfig_and_prefixed_extras(tmp_path: Path) -> None:
    extra = {
        "extra__spark_k8s__kube_config_secret": json.dumps(kubeconfig(tmp_path)),
        "extra__spark_k8s__namespace": "conn-ns",
    }
    settings = settings_from_connection("c", None, None, extra)
    assert settings.server == "https://kube:6443" and settings.namespace == "conn-ns"


def test_in_cluster(tmp_path: Path) -> None:
    root = tmp_path / "sa"
    root.mkdir()
    write(root, "token", "t")
    write(root, "ca.crt", "ca")
    write(root, "namespace", "pod-ns")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    settings = settings_from_connection("c", None, None, {"in_cluster": "true"}, env, str(root))
    assert settings.server == "https://10.0.0.1:443" and settings.namespace == "pod-ns"
    assert settings.token_file == str(root / "token")


def test_empty_connection_uses_kubectl_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "config", yaml.safe_dump(kubeconfig(tmp_path)))
    settings = settings_from_connection("c", None, None, {}, {"KUBECONFIG": path})
    assert settings.server == "https://kube:6443" and settings.namespace == "ctx-ns"


def test_two_bases_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="in_cluster and kube_config_path"):
        settings_from_connection("c", None, None, {"in_cluster": True, "kube_config_path": "/x"})


def test_unreadable_file_extra_names_field_and_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.crt")
    with pytest.raises(KubeConfigError) as caught:
        settings_from_connection("c", "https://k:1", None, {"ca_cert_file": missing})
    assert "ca_cert_file" in str(caught.value) and missing in str(caught.value)


def test_inline_pem_plain_or_base64_and_bad_key_not_echoed() -> None:
    cert = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----"
    settings = settings_from_connection(
        "c",
        "https://k:1",
        None,
        {
            "client_cert_data": base64.b64encode(cert.encode()).decode(),
            "client_private_key": KEY_PEM,
        },
    )
    assert settings.client_cert_data == cert and settings.client_key_data == KEY_PEM
    assert SECRET not in repr(settings)
    with pytest.raises(KubeConfigError) as caught:
        settings_from_connection(
            "c", "https://k:1", None, {"client_cert_data": cert, "client_private_key": SECRET}
        )
    assert "client_private_key" in str(caught.value) and SECRET not in str(caught.value)


def test_insecure_flag_parsing() -> None:
    assert not settings_from_connection(
        "c", "https://k:1", None, {"insecure_skip_tls_verify": "True"}
    ).verify
    assert settings_from_connection(
        "c", "https://k:1", None, {"insecure_skip_tls_verify": False}
    ).verify
    with pytest.raises(KubeConfigError, match="insecure_skip_tls_verify"):
        settings_from_connection("c", "https://k:1", None, {"insecure_skip_tls_verify": "maybe"})


# --------------------------------------------------------------------------- the hook itself


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark_k8s", **fields})
    )


def test_namespace_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = write(tmp_path, "config", yaml.safe_dump(kubeconfig(tmp_path)))
    bare = write(tmp_path, "bare", yaml.safe_dump(kubeconfig(tmp_path, namespace=None)))
    set_connection(monkeypatch, "with_ns", extra={"kube_config_path": config, "namespace": "conn"})
    set_connection(monkeypatch, "ctx_ns", extra={"kube_config_path": config})
    set_connection(monkeypatch, "no_ns", extra={"kube_config_path": bare})
    assert SparkK8sHook("with_ns", namespace="op").get_namespace() == "op"
    assert SparkK8sHook("with_ns").get_namespace() == "conn"
    assert SparkK8sHook("ctx_ns").get_namespace() == "ctx-ns"
    assert SparkK8sHook("no_ns").get_namespace() == "default"


def test_secrets_are_registered_with_the_log_masker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    try:
        from airflow.sdk.log import _secrets_masker
    except ImportError:  # Airflow 3.0
        from airflow.sdk.execution_time.secrets_masker import (  # type: ignore[no-redef]
            _secrets_masker,
        )

    inline = kubeconfig(tmp_path)
    set_connection(monkeypatch, "masked", extra={"kube_config_secret": yaml.safe_dump(inline)})
    SparkK8sHook("masked").get_settings()
    assert SECRET not in _secrets_masker().redact(f"token is {SECRET}")


def test_default_connection_id_and_get_client_is_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, "spark_k8s_default", host="http://127.0.0.1:1")
    hook = SparkK8sHook()
    assert hook.kubernetes_conn_id == "spark_k8s_default"
    try:
        assert hook.get_client() is hook.get_client()
    finally:
        hook.close()


async def test_async_client_from_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(
        monkeypatch,
        "async_conn",
        host="http://127.0.0.1:1",
        extra={"token": SECRET, "namespace": "a"},
    )
    client = await SparkK8sHook("async_conn").get_async_client()
    try:
        assert client.settings.server == "http://127.0.0.1:1"
        assert client.settings.token == SECRET and client.settings.namespace == "a"
    finally:
        await client.aclose()
