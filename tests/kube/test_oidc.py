"""The kubeconfig `oidc` auth-provider: the id-token while it is valid, then a refresh with
the refresh token through the issuer's discovered token endpoint (client-go's oidc plugin)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any
from urllib.parse import parse_qsl

import pytest

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from tests.kube.fakeapi import FakeApiServer, Recorded, Reply


def jwt(exp: float, subject: str) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': int(exp), 'sub': subject})}.sig"


class Issuer:
    """A scripted OpenID issuer: discovery and a refresh-token grant."""

    def __init__(self) -> None:
        self.grants: list[dict[str, str]] = []
        self.logins: list[str] = []

    def __call__(self, request: Recorded) -> Reply:
        if request.path == "/.well-known/openid-configuration":
            return Reply(200, {"token_endpoint": f"{self.url}/token"})
        if request.path == "/token":
            self.grants.append(dict(parse_qsl(request.body.decode())))
            self.logins.append(request.headers.get("authorization", ""))
            fresh = jwt(time.time() + 3600, f"refreshed-{len(self.grants)}")
            return Reply(200, {"id_token": fresh, "refresh_token": f"rt-{len(self.grants)}"})
        return Reply(404, {})

    url = ""


def kubeconfig(server: str, **provider: str) -> dict[str, Any]:
    return {
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": provider}}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }


@pytest.fixture
def issuer() -> Any:
    handler = Issuer()
    with FakeApiServer(handler) as server:
        handler.url = server.url
        yield handler


def test_a_valid_id_token_is_used_without_asking_the_issuer(issuer: Issuer) -> None:
    valid = jwt(time.time() + 600, "alice")
    with FakeApiServer(lambda r: Reply(200, {"gitVersion": "v1"})) as api:
        settings = kubeconfig_settings(
            content=kubeconfig(api.url, **{"id-token": valid, "idp-issuer-url": issuer.url})
        )
        assert valid not in repr(settings)
        with KubeClient(settings) as client:
            client.version()
    assert api.requests[0].headers["authorization"] == f"Bearer {valid}"
    assert issuer.grants == []


def test_an_expired_id_token_is_refreshed_with_the_refresh_token(issuer: Issuer) -> None:
    expired = jwt(time.time() - 10, "alice")
    config = kubeconfig(
        "http://127.0.0.1:1",
        **{
            "id-token": expired,
            "refresh-token": "rt-0",
            "idp-issuer-url": issuer.url,
            "client-id": "kubectl",
            "client-secret": "s3cret",
        },
    )
    with FakeApiServer(lambda r: Reply(200, {"gitVersion": "v1"})) as api:
        config["clusters"][0]["cluster"]["server"] = api.url
        settings = kubeconfig_settings(content=config)
        with KubeClient(settings) as client:
            client.version()
            client.version()  # the refreshed token is kept

        async def in_the_triggerer() -> None:
            async with AsyncKubeClient(settings) as client:
                await client.version()

        asyncio.run(in_the_triggerer())
    assert issuer.grants[0] == {"grant_type": "refresh_token", "refresh_token": "rt-0"}
    assert issuer.logins[0] == "Basic " + base64.b64encode(b"kubectl:s3cret").decode()
    bearer = {r.headers["authorization"] for r in api.requests}
    assert len(api.requests) == 3 and expired not in str(bearer)
    assert all(b.startswith("Bearer ") for b in bearer)


def test_a_401_refreshes_once(issuer: Issuer) -> None:
    valid = jwt(time.time() + 600, "revoked")

    def api_handler(request: Recorded) -> Reply:
        if request.headers["authorization"] == f"Bearer {valid}":
            return Reply.status_body(401, "Unauthorized", "Unauthorized")
        return Reply(200, {"gitVersion": "v1"})

    with FakeApiServer(api_handler) as api:
        provider = {
            "id-token": valid,
            "refresh-token": "rt-0",
            "idp-issuer-url": issuer.url,
            "client-id": "kubectl",
        }
        with KubeClient(kubeconfig_settings(content=kubeconfig(api.url, **provider))) as client:
            assert client.version() == {"gitVersion": "v1"}
    assert len(issuer.grants) == 1 and len(api.requests) == 2


def test_an_expired_id_token_without_a_refresh_token_is_a_clear_error() -> None:
    expired = jwt(time.time() - 10, "alice")
    settings = kubeconfig_settings(content=kubeconfig("https://k:6443", **{"id-token": expired}))
    with KubeClient(settings) as client, pytest.raises(KubeConfigError) as failed:
        client.version()
    assert "expired" in str(failed.value) and "refresh-token" in str(failed.value)
    assert expired not in str(failed.value)
