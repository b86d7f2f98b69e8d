"""ClientSettings builders: kubeconfig parsing, in-cluster, overrides."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.kubeconfig import (
    auto_settings,
    in_cluster_settings,
    kubeconfig_settings,
    unloadable_kubeconfig,
)
from airflow_provider_sparkk8s.kube.settings import ClientSettings, with_overrides
from tests.support.kubeconfig import KEY_PEM, SECRET, two_context_config, write_config


def test_kubeconfig_current_context_resolves_paths_relative_to_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, two_context_config(tmp_path))
    settings = kubeconfig_settings(path)
    assert settings.server == "https://10.0.0.1:6443"
    assert settings.ca_file == str(tmp_path / "ca.crt")
    assert settings.client_cert_file == str(tmp_path / "admin.crt")
    assert settings.client_key_file == "/abs/admin.key"
    assert settings.namespace is None and settings.verify
    assert "context 'admin'" in settings.source


def test_kubeconfig_named_context_with_token_namespace_and_tls_name(tmp_path: Path) -> None:
    settings = kubeconfig_settings(
        write_config(tmp_path, two_context_config(tmp_path)), context="robot"
    )
    assert settings.server == "https://edge:443"
    assert settings.ca_data == "CA PEM" and settings.tls_server_name == "kubernetes"
    assert settings.token == SECRET and settings.namespace == "spark"
    assert settings.effective_namespace() == "spark"
    assert settings.effective_namespace("operator-ns") == "operator-ns"
    assert SECRET not in repr(settings) and SECRET not in str(settings)
    assert "token=<redacted>" in repr(settings)


def test_inline_kubeconfig_with_inline_credentials(tmp_path: Path) -> None:
    content = yaml.safe_dump(two_context_config(tmp_path))
    settings = kubeconfig_settings(content=content, context="inline")
    assert settings.client_cert_data == "CERT PEM" and settings.client_key_data == KEY_PEM
    assert settings.source.startswith("inline kubeconfig")
    assert SECRET not in repr(settings)
    assert kubeconfig_settings(content=two_context_config(tmp_path), context="inline") == settings


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ("legacy", "'gcp' auth-provider, removed from client-go in 1.26"),
        ("nope", "no context named 'nope'"),
    ],
)
def test_kubeconfig_errors_are_clear(tmp_path: Path, context: str, message: str) -> None:
    path = write_config(tmp_path, two_context_config(tmp_path))
    with pytest.raises(KubeConfigError, match=message):
        kubeconfig_settings(path, context=context)


def test_kubeconfig_bad_base64_key_never_echoes_the_value(tmp_path: Path) -> None:
    config = two_context_config(tmp_path)
    config["users"][2]["user"]["client-key-data"] = SECRET + "!!"
    with pytest.raises(KubeConfigError) as caught:
        kubeconfig_settings(content=yaml.safe_dump(config), context="inline")
    assert "client-key-data" in str(caught.value) and SECRET not in str(caught.value)


def test_inline_kubeconfig_yaml_error_never_echoes_the_content() -> None:
    with pytest.raises(KubeConfigError) as caught:
        kubeconfig_settings(content=f"users: [{{token: {SECRET}\n  - : :")
    assert "not valid YAML" in str(caught.value) and SECRET not in str(caught.value)


def test_kubeconfig_list_merge_first_definition_wins(tmp_path: Path) -> None:
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    first = {
        "clusters": [
            {
                "name": "main",
                "cluster": {"server": "https://first:1", "certificate-authority": "ca.crt"},
            }
        ]
    }
    second = two_context_config(tmp_path)
    path = f"{write_config(first_dir, first)}{os.pathsep}{write_config(second_dir, second)}"
    settings = kubeconfig_settings(path)
    assert settings.server == "https://first:1"
    assert settings.ca_file == str(first_dir / "ca.crt")  # relative to the file that names it
    assert settings.client_cert_file == str(second_dir / "admin.crt")


def test_unreadable_kubeconfig_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=str(tmp_path / "missing")):
        kubeconfig_settings(tmp_path / "missing")


# --------------------------------------------------------------------------- in-cluster


def service_account_dir(tmp_path: Path, namespace: str | None = "spark-jobs") -> Path:
    root = tmp_path / "serviceaccount"
    root.mkdir()
    (root / "token").write_text(SECRET)
    (root / "ca.crt").write_text("CA")
    if namespace:
        (root / "namespace").write_text(namespace + "\n")
    return root


def test_in_cluster_reads_env_and_mount(tmp_path: Path) -> None:
    root = service_account_dir(tmp_path)
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    settings = in_cluster_settings(env, str(root))
    assert settings.server == "https://10.96.0.1:443"
    assert settings.token_file == str(root / "token") and settings.token is None
    assert settings.ca_file == str(root / "ca.crt")
    assert settings.namespace == "spark-jobs"
    ipv6 = in_cluster_settings({**env, "KUBERNETES_SERVICE_HOST": "fd00::1"}, str(root))
    assert ipv6.server == "https://[fd00::1]:443"


def test_in_cluster_errors(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_settings({}, str(tmp_path))
    env = {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError, match=str(tmp_path / "token")):
        in_cluster_settings(env, str(tmp_path))


def test_auto_settings_prefers_kubeconfig_then_in_cluster(tmp_path: Path) -> None:
    root = service_account_dir(tmp_path)
    cluster_env = {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "HOME": str(tmp_path / "home"),
    }
    assert auto_settings(cluster_env, in_cluster_root=str(root)).server == "https://10.96.0.1:443"
    home_config = tmp_path / "home" / ".kube" / "config"
    home_config.parent.mkdir(parents=True)
    home_config.write_text(yaml.safe_dump(two_context_config(tmp_path)))
    assert auto_settings(cluster_env, in_cluster_root=str(root)).server == "https://10.0.0.1:6443"
    explicit = write_config(tmp_path, two_context_config(tmp_path), "other")
    chosen = auto_settings({**cluster_env, "KUBECONFIG": str(explicit)}, context="robot")
    assert chosen.server == "https://edge:443" and str(explicit) in chosen.source
    with pytest.raises(KubeConfigError, match="no Kubernetes configuration"):
        auto_settings({"HOME": str(tmp_path / "nohome")})


# --------------------------------------------------------------------------- overrides


def test_explicit_fields_win_and_replace_their_whole_group(tmp_path: Path) -> None:
    base = kubeconfig_settings(
        write_config(tmp_path, two_context_config(tmp_path)), context="inline"
    )
    token_file = tmp_path / "t"
    token_file.write_text("x")
    merged = with_overrides(
        base,
        {
            "token_file": str(token_file),
            "ca_file": "/ca",
            "client_cert_file": None,
            "namespace": "mine",
        },
        "connection",
    )
    assert merged.token_file == str(token_file) and merged.token is None
    assert merged.ca_file == "/ca" and merged.ca_data is None
    assert merged.client_cert_data == "CERT PEM"  # None = not given: the base stays
    assert merged.namespace == "mine" and merged.server == base.server
    assert merged.source.endswith("+ connection")


def test_without_a_base_the_server_is_required() -> None:
    with pytest.raises(KubeConfigError, match="no API server URL"):
        with_overrides(None, {"token": SECRET})
    assert (
        with_overrides(None, {"server": "http://127.0.0.1:8080"}).server == "http://127.0.0.1:8080"
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"server": "127.0.0.1:6443"}, "must start with https:// or http://"),
        (
            {"server": "https://h", "token": SECRET, "token_file": "/t"},
            "both a token and a token file",
        ),
        ({"server": "https://h", "client_cert_file": "/c"}, "the client key is missing"),
        ({"server": "https://h", "client_key_data": KEY_PEM}, "the client certificate is missing"),
    ],
)
def test_settings_validation(fields: dict, message: str) -> None:
    with pytest.raises(KubeConfigError, match=message) as caught:
        ClientSettings(**fields)
    assert SECRET not in str(caught.value)


def test_kubeconfig_exec_plugin(tmp_path: Path) -> None:
    path = write_config(tmp_path, two_context_config(tmp_path))
    settings = kubeconfig_settings(path, context="plugin")
    assert settings.exec_command == (str(tmp_path / "bin/get-token"), "--cluster", "main")
    assert settings.exec_env == (("PROFILE", SECRET),)
    assert settings.exec_api_version == "client.authentication.k8s.io/v1beta1"
    assert settings.auth_description.startswith("exec plugin ")
    assert SECRET not in repr(settings) and "exec_env=['PROFILE']" in repr(settings)
    token_file = tmp_path / "t"
    token_file.write_text("x")
    explicit = with_overrides(settings, {"token_file": str(token_file)})
    assert explicit.exec_command is None  # an explicit token replaces the plugin


def test_kubeconfig_entries_that_do_not_exist_are_skipped_as_kubectl_does(tmp_path: Path) -> None:
    present = write_config(tmp_path, two_context_config(tmp_path), "other")
    missing = str(tmp_path / "missing")
    env = {"KUBECONFIG": os.pathsep.join([missing, str(present)]), "HOME": str(tmp_path)}
    assert auto_settings(env, context="robot").server == "https://edge:443"
    assert unloadable_kubeconfig(env) == []
    only_missing = {"KUBECONFIG": missing, "HOME": str(tmp_path)}
    assert unloadable_kubeconfig(only_missing) == [missing]
    with pytest.raises(KubeConfigError, match=f"KUBECONFIG names {missing}: no such file"):
        auto_settings(only_missing)
