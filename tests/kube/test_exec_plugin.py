"""Exec credential plugins: the triggerer's loop never waits for one, credentials are shared
across clients until they expire, installHint, interactiveMode, client certificates."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
import yaml

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from testenv.controlplane import ControlPlane
from tests.kube.fakeapi import FakeApiServer, scripted

PLUGIN = """#!{python}
import json, os, pathlib, sys, time
runs = pathlib.Path(os.environ["RUNS_FILE"])
runs.write_text(runs.read_text() + os.environ["KUBERNETES_EXEC_INFO"] + "\\n" if runs.exists()
                else os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
time.sleep(float(os.environ.get("SLEEP", "0")))
status = json.loads(os.environ.get("STATUS", '{{"token": "exec-token"}}'))
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": status}}))
"""


def plugin_settings(server_url: str, tmp_path: Path, **env: str) -> ClientSettings:
    plugin = tmp_path / "plugin"
    plugin.write_text(PLUGIN.format(python=sys.executable))
    plugin.chmod(0o755)
    env = {"RUNS_FILE": str(tmp_path / "runs"), **env}
    return ClientSettings(
        server=server_url, exec_command=(str(plugin),), exec_env=tuple(env.items())
    )


def runs(tmp_path: Path) -> list[dict]:
    path = tmp_path / "runs"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_slow_plugin_never_stalls_the_event_loop(tmp_path: Path) -> None:
    """The loop keeps ticking every 10 ms while a 2-second plugin runs (a blocking run stalls
    it for the plugin's whole duration)."""
    plugin_seconds = 2.0

    async def measure(server: FakeApiServer) -> tuple[float, float]:
        settings = plugin_settings(server.url, tmp_path, SLEEP=str(plugin_seconds))
        async with AsyncKubeClient(settings) as client:
            worst, stop = 0.0, asyncio.Event()

            async def ticker() -> None:
                nonlocal worst
                while not stop.is_set():
                    before = time.perf_counter()
                    await asyncio.sleep(0.01)
                    worst = max(worst, time.perf_counter() - before - 0.01)

            ticking = asyncio.create_task(ticker())
            started = time.perf_counter()
            await client.version()
            took = time.perf_counter() - started
            stop.set()
            await ticking
        return worst, took

    with FakeApiServer(scripted()) as server:
        worst, took = asyncio.run(measure(server))
    assert took >= plugin_seconds  # the plugin really ran during the measurement
    assert worst < plugin_seconds / 4, f"the loop stalled {worst:.2f} s"
    assert [r["spec"]["interactive"] for r in runs(tmp_path)] == [False]


def test_credentials_are_shared_across_clients_until_they_expire(tmp_path: Path) -> None:
    far = json.dumps({"token": "shared", "expirationTimestamp": "2999-01-01T00:00:00Z"})
    with FakeApiServer(scripted()) as server:
        settings = plugin_settings(server.url, tmp_path, STATUS=far)
        for _ in range(3):  # the operator builds several clients per task
            with KubeClient(settings) as client:
                client.version()

        async def in_the_triggerer() -> None:
            async with AsyncKubeClient(settings) as client:
                await asyncio.gather(*(client.version() for _ in range(5)))

        asyncio.run(in_the_triggerer())
    assert len(runs(tmp_path)) == 1
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer shared"}
    assert len(server.requests) == 8


def test_an_expired_credential_runs_the_plugin_again(tmp_path: Path) -> None:
    expired = json.dumps({"token": "old", "expirationTimestamp": "2000-01-01T00:00:00Z"})
    with FakeApiServer(scripted()) as server:
        settings = plugin_settings(server.url, tmp_path, STATUS=expired)
        with KubeClient(settings) as client:
            client.version()
            client.version()
    assert len(runs(tmp_path)) == 2


def test_a_missing_plugin_names_the_install_hint(tmp_path: Path) -> None:
    config = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [
            {
                "name": "u",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "sparkk8s-no-such-login-tool",
                        "installHint": "Install it with: pip install sparkk8s-login",
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    settings = kubeconfig_settings(content=config)
    with KubeClient(settings) as client, pytest.raises(KubeConfigError) as missing:
        client.version()
    assert "sparkk8s-no-such-login-tool: executable not found" in str(missing.value)
    assert "pip install sparkk8s-login" in str(missing.value)

    async def async_missing() -> None:
        async with AsyncKubeClient(settings) as client:
            await client.version()

    with pytest.raises(KubeConfigError, match="pip install sparkk8s-login"):
        asyncio.run(async_missing())


@pytest.mark.parametrize(("mode", "interactive"), [("Never", False), ("IfAvailable", False)])
def test_interactive_mode_without_a_terminal(tmp_path: Path, mode: str, interactive: bool):
    with FakeApiServer(scripted()) as server:
        settings = plugin_settings(server.url, tmp_path)
        settings = ClientSettings(**{**settings.__dict__, "exec_interactive_mode": mode})
        with KubeClient(settings) as client:
            client.version()
    assert runs(tmp_path)[0]["spec"]["interactive"] is interactive


def test_interactive_mode_always_needs_a_terminal(tmp_path: Path) -> None:
    with FakeApiServer(scripted()) as server:
        settings = plugin_settings(server.url, tmp_path)
        settings = ClientSettings(**{**settings.__dict__, "exec_interactive_mode": "Always"})
        with KubeClient(settings) as client, pytest.raises(KubeConfigError) as refused:
            client.version()
    assert "standard input is not a terminal" in str(refused.value)
    assert runs(tmp_path) == [] and server.requests == []


def test_an_unknown_interactive_mode_is_refused_when_the_kubeconfig_is_read() -> None:
    config = yaml.safe_load(
        """
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://k:6443"}}]
users: [{name: u, user: {exec: {command: login, interactiveMode: Sometimes}}}]
"""
    )
    with pytest.raises(KubeConfigError, match="interactiveMode='Sometimes'"):
        kubeconfig_settings(content=config)


@pytest.mark.controlplane
def test_client_certificates_from_a_plugin_authenticate_both_clients(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    status = json.dumps(
        {
            "clientCertificateData": Path(control_plane.admin_cert_file).read_text(),
            "clientKeyData": Path(control_plane.admin_key_file).read_text(),
        }
    )
    settings = plugin_settings(control_plane.server, tmp_path, STATUS=status)
    settings = ClientSettings(**{**settings.__dict__, "ca_file": str(control_plane.ca_file)})
    with KubeClient(settings) as client:
        namespaces = client.request("GET", "/api/v1/namespaces")  # admin only
    assert any(n["metadata"]["name"] == "kube-system" for n in namespaces["items"])

    async def async_list() -> dict:
        async with AsyncKubeClient(settings) as client:
            return await client.request("GET", "/api/v1/namespaces/kube-system")

    assert asyncio.run(async_list())["metadata"]["name"] == "kube-system"
    assert len(runs(tmp_path)) == 1  # one run served both clients


def test_a_plugins_environment_is_never_shown() -> None:
    """A kubeconfig's exec env may carry credentials: a plugin's repr leaves it out."""
    from airflow_provider_sparkk8s.kube.exec_plugin import ExecPlugin

    plugin = ExecPlugin(("aws", "eks", "get-token"), env=(("AWS_SECRET_ACCESS_KEY", "s3cr3t"),))
    assert "s3cr3t" not in repr(plugin) and "aws" in repr(plugin)


def test_a_plugin_runs_on_uvloop_as_in_the_api_server(tmp_path: Path) -> None:
    """uvicorn runs the api-server (and the Spark UI plugin's routes) on uvloop, whose
    subprocess_exec takes its environment only as an exact dict."""
    uvloop = pytest.importorskip("uvloop")

    async def ask(server: FakeApiServer) -> None:
        async with AsyncKubeClient(plugin_settings(server.url, tmp_path)) as client:
            await client.version()

    with FakeApiServer(scripted()) as server:
        uvloop.run(ask(server))
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer exec-token"]
    assert [r["spec"]["interactive"] for r in runs(tmp_path)] == [False]
