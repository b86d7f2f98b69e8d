"""Kubeconfig parity with the official client: for generated kubeconfigs, the settings we
resolve equal what `kubernetes.config` resolves (server, TLS verification, CA, client
certificate and key, token and token file, proxy, TLS server name, namespace).

Generated kubeconfigs stay inside what both accept; the deliberate differences (both a
token and a token file, both a file and inline data, a certificate without its key, ...)
are listed in docs/connection.md and pinned by the last tests here."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes.client import Configuration
from kubernetes.config.kube_config import KubeConfigLoader

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.settings import ClientSettings

EXAMPLES = 600
names = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
hosts = st.sampled_from(["127.0.0.1", "kube.example.com", "10.0.0.1", "[::1]", "api"])
pem_text = st.text(alphabet="ABCDEFGHIJKLMNOP0123456789+/=\n -", min_size=8, max_size=120).map(
    lambda body: f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
)


def b64(text: str, wrap: int | None) -> str:
    encoded = base64.b64encode(text.encode()).decode()
    if wrap:
        encoded = "\n".join(encoded[i : i + wrap] for i in range(0, len(encoded), wrap))
    return encoded


@st.composite
def material(draw: st.DrawFn, directory: Path, name: str) -> tuple[str, dict[str, str]]:
    """(PEM text, the kubeconfig fields naming it): a file, relative or absolute, or data."""
    text = draw(pem_text)
    how = draw(st.sampled_from(["absolute", "relative", "data"]))
    return text, {"how": how, "name": name}


@st.composite
def kubeconfigs(draw: st.DrawFn) -> dict[str, Any]:
    server = f"https://{draw(hosts)}:{draw(st.integers(1, 65535))}"
    server += draw(st.sampled_from(["", "/", "/k8s/clusters/c-1", "/k8s/clusters/c-1/"]))
    cluster: dict[str, Any] = {"server": server}
    ca = draw(st.sampled_from(["none", "file", "data", "data-wrapped"]))
    if draw(st.booleans()):
        cluster["insecure-skip-tls-verify"] = draw(st.booleans())
    if draw(st.booleans()):
        cluster["tls-server-name"] = draw(names)
    if draw(st.booleans()):
        cluster["proxy-url"] = f"http://{draw(names)}:{draw(st.integers(1, 65535))}"
    user_kind = draw(st.sampled_from(["none", "token", "tokenFile", "cert-file", "cert-data"]))
    context: dict[str, Any] = {"cluster": "k", "user": "u"}
    if draw(st.booleans()):
        context["namespace"] = draw(names)
    return {
        "server": server,
        "cluster": cluster,
        "ca": ca,
        "ca_text": draw(pem_text),
        "wrap": draw(st.sampled_from([64, 76])),
        "user_kind": user_kind,
        "token": draw(st.from_regex(r"[A-Za-z0-9._-]{1,40}", fullmatch=True)),
        "cert_text": draw(pem_text),
        "key_text": draw(pem_text),
        "relative": draw(st.booleans()),
        "context": context,
        "context_name": draw(names),
        "explicit_context": draw(st.booleans()),
    }


def write(spec: dict[str, Any], directory: Path) -> tuple[dict[str, Any], str | None]:
    """The kubeconfig (and files it names) for one generated spec."""

    def file_field(name: str, text: str) -> str:
        path = directory / name
        path.write_text(text)
        return name if spec["relative"] else str(path)

    cluster = dict(spec["cluster"])
    if spec["ca"] == "file":
        cluster["certificate-authority"] = file_field("ca.crt", spec["ca_text"])
    elif spec["ca"].startswith("data"):
        wrap = spec["wrap"] if spec["ca"] == "data-wrapped" else None
        cluster["certificate-authority-data"] = b64(spec["ca_text"], wrap)
    user: dict[str, Any] = {}
    kind = spec["user_kind"]
    if kind == "token":
        user["token"] = spec["token"]
    elif kind == "tokenFile":
        user["tokenFile"] = file_field("token", spec["token"])
    elif kind == "cert-file":
        user["client-certificate"] = file_field("client.crt", spec["cert_text"])
        user["client-key"] = file_field("client.key", spec["key_text"])
    elif kind == "cert-data":
        user["client-certificate-data"] = b64(spec["cert_text"], None)
        user["client-key-data"] = b64(spec["key_text"], 76)
    name = spec["context_name"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": name, "context": spec["context"]}],
    }
    return config, (name if spec["explicit_context"] else None)


def read(path: str | None) -> str | None:
    return Path(path).read_text() if path else None


def oracle(config: dict[str, Any], path: Path, context: str | None) -> dict[str, Any]:
    loader = KubeConfigLoader(
        config_dict=config, active_context=context, config_base_path=str(path.parent)
    )
    configuration = Configuration()
    loader.load_and_set(configuration)
    token = configuration.api_key.get("BearerToken")
    return {
        "server": configuration.host,
        "verify": configuration.verify_ssl,
        "ca": read(configuration.ssl_ca_cert),
        "cert": read(configuration.cert_file),
        "key": read(configuration.key_file),
        "token": token.removeprefix("Bearer ") if token else None,
        "proxy": configuration.proxy,
        "tls_server_name": configuration.tls_server_name,
        "namespace": loader.current_context["context"].get("namespace"),
    }


def ours(resolved: ClientSettings) -> dict[str, Any]:
    return {
        "server": resolved.server,
        "verify": resolved.verify,
        "ca": resolved.ca_data or read(resolved.ca_file),
        "cert": resolved.client_cert_data or read(resolved.client_cert_file),
        "key": resolved.client_key_data or read(resolved.client_key_file),
        "token": resolved.token or (read(resolved.token_file) or "").strip() or None,
        "proxy": resolved.proxy_url,
        "tls_server_name": resolved.tls_server_name,
        "namespace": resolved.namespace,
    }


def resolved_settings_equal_the_official_clients(spec: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config, context = write(spec, directory)
        path = directory / "config"
        import yaml

        path.write_text(yaml.safe_dump(config))
        expected = oracle(config, path, context)
        actual = ours(kubeconfig_settings(str(path), context=context))
    assert actual == expected


def test_resolved_settings_equal_the_official_clients() -> None:
    """At least 500 distinct generated kubeconfigs, each resolved equally by both (counted:
    Hypothesis stops early when its strategy runs out of new cases)."""
    cases: set[str] = set()

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(spec=kubeconfigs())
    def case(spec: dict[str, Any]) -> None:
        resolved_settings_equal_the_official_clients(spec)
        cases.add(json.dumps(spec, sort_keys=True, default=str))

    case()
    assert len(cases) >= 500, len(cases)


# ------------------------------------------------------------------ deliberate differences


def config_with_user(user: dict[str, Any]) -> dict[str, Any]:
    return {
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://k:6443"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }


@pytest.mark.parametrize(
    "user",
    [
        {"token": "t", "tokenFile": "/etc/hostname"},  # the official client: the file wins
        {"client-certificate-data": b64("x", None)},  # the official client: no key, no error
    ],
)
def test_ambiguous_users_are_refused_where_the_official_client_guesses(user: dict) -> None:
    with pytest.raises(KubeConfigError):
        kubeconfig_settings(content=config_with_user(user))
