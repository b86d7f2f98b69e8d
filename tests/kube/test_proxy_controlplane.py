"""Both senders through a real HTTP CONNECT proxy (tinyproxy) to the real kube-apiserver:
HTTPS_PROXY, NO_PROXY (domain and domain-suffix rules), a kubeconfig proxy-url, proxy
credentials. The proxy's own log says which requests went through it.

Only the proxy can resolve PROXIED_HOST, so a request that reaches the API server by that
name went through the proxy, and one that bypasses it fails to resolve the name."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
import yaml

from airflow_provider_sparkk8s.errors import KubeConnectionError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.controlplane import ControlPlane
from testenv.tinyproxy import PROXIED_HOST, TinyProxy

pytestmark = pytest.mark.controlplane


def sync_version(settings: ClientSettings) -> dict:
    with KubeClient(settings) as client:
        return client.version()


def async_version(settings: ClientSettings) -> dict:
    async def call() -> dict:
        async with AsyncKubeClient(settings) as client:
            return await client.version()

    return asyncio.run(call())


SENDERS = pytest.mark.parametrize("version", [sync_version, async_version], ids=["sync", "async"])
Version = Callable[[ClientSettings], dict]


def admin_settings(control_plane: ControlPlane, host: str) -> ClientSettings:
    port = urlsplit(control_plane.server).port
    return ClientSettings(
        server=f"https://{host}:{port}",
        ca_file=str(control_plane.ca_file),
        client_cert_file=str(control_plane.admin_cert_file),
        client_key_file=str(control_plane.admin_key_file),
        tls_server_name="kubernetes",  # on the serving certificate; the URL's name is not
        connect_timeout=5.0,
    )


@SENDERS
def test_https_proxy_from_the_environment_tunnels_to_the_api_server(
    version: Version,
    control_plane: ControlPlane,
    http_proxy: TinyProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", http_proxy.url.removeprefix("http://"))  # no scheme
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    settings = admin_settings(control_plane, PROXIED_HOST)
    assert version(settings)["gitVersion"].startswith("v1.")
    port = urlsplit(control_plane.server).port
    assert http_proxy.requests() == [f"CONNECT {PROXIED_HOST}:{port} HTTP/1.1"]


@SENDERS
@pytest.mark.parametrize("no_proxy", [".proxied.test", "proxied.test", "*.proxied.test"])
def test_no_proxy_domain_rules_bypass_the_proxy(
    version: Version,
    no_proxy: str,
    control_plane: ControlPlane,
    http_proxy: TinyProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", http_proxy.url)
    monkeypatch.setenv("NO_PROXY", f"10.0.0.0/8,{no_proxy}")
    monkeypatch.delenv("no_proxy", raising=False)
    settings = dataclasses.replace(admin_settings(control_plane, PROXIED_HOST), connect_timeout=2)
    with pytest.raises(KubeConnectionError) as direct:
        version(settings)
    # It went straight to the name only the proxy can resolve, and never to the proxy.
    assert "ConnectError" in str(direct.value)
    assert http_proxy.requests() == []


@SENDERS
def test_kubeconfig_proxy_url_is_used_even_for_a_loopback_server(
    version: Version, control_plane: ControlPlane, http_proxy: TinyProxy, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "*")  # the kubeconfig's proxy-url ignores the environment
    config = yaml.safe_load(control_plane.admin_kubeconfig.read_text())
    config["clusters"][0]["cluster"]["proxy-url"] = http_proxy.url
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    settings = kubeconfig_settings(str(path))
    assert version(settings)["gitVersion"].startswith("v1.")
    target = urlsplit(control_plane.server).netloc
    assert http_proxy.requests() == [f"CONNECT {target} HTTP/1.1"]


@SENDERS
def test_proxy_credentials_from_the_url(
    version: Version,
    control_plane: ControlPlane,
    http_proxy_with_login: TinyProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("HTTPS_PROXY", http_proxy_with_login.url)
    settings = admin_settings(control_plane, PROXIED_HOST)
    assert version(settings)["gitVersion"].startswith("v1.")

    monkeypatch.setenv("HTTPS_PROXY", http_proxy_with_login.url.replace("pr0xy-s3cret", "wrong"))
    with pytest.raises(KubeConnectionError) as refused:
        version(dataclasses.replace(settings, connect_timeout=2))
    assert "407" in str(refused.value) or "Proxy" in str(refused.value)
    assert "wrong" not in str(refused.value) and "pr0xy-s3cret" not in str(refused.value)


def test_a_watch_streams_through_the_proxy(
    control_plane: ControlPlane, http_proxy: TinyProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", http_proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    settings = admin_settings(control_plane, PROXIED_HOST)

    async def first_event() -> dict:
        async with AsyncKubeClient(settings) as client:
            async for event in client.watch("/api/v1/namespaces", params={"timeoutSeconds": "5"}):
                return event
        raise AssertionError("the watch ended without an event")

    event = asyncio.run(first_event())
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Namespace"
    with KubeClient(settings) as client:
        events = client.watch("/api/v1/namespaces", params={"timeoutSeconds": "5"})
        assert next(iter(events))["type"] == "ADDED"
    assert len(http_proxy.requests()) == 2
