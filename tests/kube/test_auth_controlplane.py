"""Every auth mode against the real kube-apiserver (the `control_plane` fixture).

Who the server thinks we are is asked with SelfSubjectReview, so each test proves that
the credentials were actually used, not merely that some request succeeded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError
from airflow_provider_sparkk8s.kube import watch_sync
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.auth import ssl_context
from airflow_provider_sparkk8s.kube.http_pool import HttpPool
from airflow_provider_sparkk8s.kube.kubeconfig import in_cluster_settings, kubeconfig_settings
from airflow_provider_sparkk8s.kube.listwatch import Listed, StreamEnded, WatchSpec, WatchStats
from airflow_provider_sparkk8s.kube.paths import apply_params, resource_path
from airflow_provider_sparkk8s.kube.request import APPLY_PATCH
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.cluster_access.client_settings import spark_submit_settings
from testenv.harness.waiting import wait_for
from tests.kube.tlsfiles import Pki

pytestmark = pytest.mark.controlplane

REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def whoami(client: KubeClient) -> str:
    return client.request("POST", REVIEW_PATH, json=REVIEW)["status"]["userInfo"]["username"]


def service_account(kube_admin: k8s.ApiClient, namespace: str, name: str) -> None:
    k8s.CoreV1Api(kube_admin).create_namespaced_service_account(
        namespace,
        {"metadata": {"name": name}},  # type: ignore[arg-type]  # the client takes dicts
    )


def admin_settings(control_plane, **fields: object) -> ClientSettings:  # type: ignore[no-untyped-def]
    values: dict[str, object] = {
        "server": control_plane.server,
        "ca_file": str(control_plane.ca_file),
        "client_cert_file": str(control_plane.admin_cert_file),
        "client_key_file": str(control_plane.admin_key_file),
    }
    values.update(fields)
    return ClientSettings(**values)  # type: ignore[arg-type]


def test_client_certificate_files(control_plane) -> None:  # type: ignore[no-untyped-def]
    with KubeClient(admin_settings(control_plane)) as client:
        assert whoami(client) == "admin"
        assert client.version()["gitVersion"].startswith("v1.")


def test_client_certificate_and_ca_inline(control_plane) -> None:  # type: ignore[no-untyped-def]
    settings = ClientSettings(
        server=control_plane.server,
        ca_data=Path(control_plane.ca_file).read_text(),
        client_cert_data=Path(control_plane.admin_cert_file).read_text(),
        client_key_data=Path(control_plane.admin_key_file).read_text(),
    )
    with KubeClient(settings) as client:
        assert whoami(client) == "admin"


def test_static_token(control_plane, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    settings = ClientSettings(
        server=control_plane.server,
        ca_file=str(control_plane.ca_file),
        token=control_plane.static_token,
    )
    with KubeClient(settings) as client:
        assert whoami(client) == "sparkk8s-token-user"
        with pytest.raises(KubeApiError) as denied:  # the token user has no permissions
            client.request("GET", "/api/v1/namespaces/default/pods")
    assert denied.value.status == 403
    assert "list pods in namespace 'default'" in str(denied.value)
    assert control_plane.static_token not in caplog.text
    assert control_plane.static_token not in str(denied.value)


def test_a_403_in_a_namespace_that_does_not_exist_says_it_may_not(  # type: ignore[no-untyped-def]
    control_plane, namespace: str
) -> None:
    """Papercut 10 (issue 29): without cluster-wide rights, a namespace that is not there
    answers 403 like a missing permission; the message says both."""
    token = control_plane.request_token(namespace, "default")
    settings = ClientSettings(
        server=control_plane.server, ca_file=str(control_plane.ca_file), token=token
    )
    with KubeClient(settings) as client:
        with pytest.raises(KubeApiError) as denied:
            client.request("GET", "/api/v1/namespaces/no-such-namespace-i29/pods")
        with pytest.raises(KubeApiError) as cluster_wide:
            client.request("GET", "/api/v1/nodes")
    assert denied.value.status == 403
    assert str(denied.value).count("missing permission to list pods in namespace") == 1
    assert "(or the namespace 'no-such-namespace-i29' does not exist)" in str(denied.value)
    assert cluster_wide.value.status == 403 and "does not exist" not in str(cluster_wide.value)


def test_service_account_token_from_token_request(  # type: ignore[no-untyped-def]
    control_plane, namespace: str
) -> None:
    token = control_plane.request_token(namespace, "default")
    settings = ClientSettings(
        server=control_plane.server, ca_file=str(control_plane.ca_file), token=token
    )
    with KubeClient(settings) as client:
        assert whoami(client) == f"system:serviceaccount:{namespace}:default"


def test_token_file_replaced_while_the_client_is_in_use(  # type: ignore[no-untyped-def]
    control_plane, namespace: str, kube_admin: k8s.ApiClient, tmp_path: Path
) -> None:
    service_account(kube_admin, namespace, "second")
    token_file = tmp_path / "token"
    token_file.write_text(control_plane.request_token(namespace, "default"))
    settings = ClientSettings(
        server=control_plane.server, ca_file=str(control_plane.ca_file), token_file=str(token_file)
    )
    with KubeClient(settings) as client:
        assert whoami(client) == f"system:serviceaccount:{namespace}:default"
        # Rotate the way the kubelet does: write aside, then rename over the old file.
        fresh = tmp_path / "token.tmp"
        fresh.write_text(
            wait_for(
                lambda: control_plane.request_token(namespace, "second"),
                30,
                "a token for the second service account",
            )
        )
        os.replace(fresh, token_file)
        assert whoami(client) == f"system:serviceaccount:{namespace}:second"


def test_kubeconfig_with_a_non_default_context(  # type: ignore[no-untyped-def]
    control_plane, namespace: str, tmp_path: Path
) -> None:
    admin = yaml.safe_load(Path(control_plane.admin_kubeconfig).read_text())
    real_context = {
        "name": "real",
        "context": {**admin["contexts"][0]["context"], "namespace": namespace},
    }
    decoy_cluster = {"name": "decoy", "cluster": {"server": "https://127.0.0.1:1"}}
    config = {
        **admin,
        "clusters": [*admin["clusters"], decoy_cluster],
        "contexts": [
            {
                "name": "decoy",
                "context": {"cluster": "decoy", "user": admin["contexts"][0]["context"]["user"]},
            },
            real_context,
        ],
        "current-context": "decoy",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    settings = kubeconfig_settings(path, context="real")
    assert settings.effective_namespace() == namespace
    with KubeClient(settings) as client:
        assert whoami(client) == "admin"
        client.request("GET", resource_path("v1", "ConfigMap", namespace))


def test_in_cluster_layout(  # type: ignore[no-untyped-def]
    control_plane, namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "serviceaccount"
    root.mkdir()
    (root / "token").write_text(control_plane.request_token(namespace, "default"))
    shutil.copy(control_plane.ca_file, root / "ca.crt")
    (root / "namespace").write_text(namespace)
    port = control_plane.server.rsplit(":", 1)[1]
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
    settings = in_cluster_settings(env, str(root))
    assert settings.effective_namespace() == namespace
    with KubeClient(settings) as client:
        assert whoami(client) == f"system:serviceaccount:{namespace}:default"


def test_spark_submit_conf_keys(control_plane, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prefix = "spark.kubernetes.authenticate.submission"
    conf = {
        "spark.master": f"k8s://{control_plane.server.removeprefix('https://')}",
        f"{prefix}.caCertFile": str(control_plane.ca_file),
        f"{prefix}.clientCertFile": str(control_plane.admin_cert_file),
        f"{prefix}.clientKeyFile": str(control_plane.admin_key_file),
    }
    with KubeClient(spark_submit_settings(conf, {"HOME": str(tmp_path)})) as client:
        assert whoami(client) == "admin"
    token_file = tmp_path / "token"
    token_file.write_text(control_plane.static_token)
    conf = {
        "spark.master": f"k8s://{control_plane.server}",
        f"{prefix}.caCertFile": str(control_plane.ca_file),
        f"{prefix}.oauthTokenFile": str(token_file),
    }
    with KubeClient(spark_submit_settings(conf, {"HOME": str(tmp_path)})) as client:
        assert whoami(client) == "sparkk8s-token-user"


def test_wrong_ca_is_a_clear_tls_error(control_plane, pki: Pki) -> None:  # type: ignore[no-untyped-def]
    settings = ClientSettings(
        server=control_plane.server, ca_file=pki.other_ca_file, token=control_plane.static_token
    )
    with KubeClient(settings) as client, pytest.raises(KubeConnectionError) as caught:
        client.version()
    message = str(caught.value)
    assert "TLS verification" in message and pki.other_ca_file in message
    assert control_plane.static_token not in message


def test_tls_server_name(control_plane) -> None:  # type: ignore[no-untyped-def]
    with KubeClient(admin_settings(control_plane, tls_server_name="kubernetes")) as client:
        assert whoami(client) == "admin"
    with (
        KubeClient(admin_settings(control_plane, tls_server_name="not-the-server.test")) as c,
        pytest.raises(KubeConnectionError, match="TLS verification"),
    ):
        c.version()


def test_invalid_token_is_a_clear_401(control_plane, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    bogus = "not-a-valid-token-5b2e91d4"
    settings = ClientSettings(
        server=control_plane.server, ca_file=str(control_plane.ca_file), token=bogus
    )
    with KubeClient(settings) as client, pytest.raises(KubeApiError) as caught:
        client.request("GET", "/api/v1/namespaces/default/pods")
    error = caught.value
    assert error.status == 401 and error.reason == "Unauthorized"
    assert "rejected the credentials (bearer token" in str(error)
    assert bogus not in str(error) and bogus not in caplog.text


def test_insecure_skip_verify_warns(control_plane, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    settings = admin_settings(control_plane, ca_file=None, verify=False)
    with KubeClient(settings) as client:
        assert whoami(client) == "admin"
    assert any("TLS verification is OFF" in r.getMessage() for r in caplog.records)


def test_watch_and_async_client(control_plane, namespace: str) -> None:  # type: ignore[no-untyped-def]
    settings = admin_settings(control_plane)
    path = resource_path("v1", "ConfigMap", namespace)
    with KubeClient(settings) as client:
        listed = client.request("GET", path)
        version = listed["metadata"]["resourceVersion"]
        names: list[str] = []

        def follow() -> None:
            for event in client.watch(path, {"resourceVersion": version, "timeoutSeconds": 20}):
                if event["type"] == "ADDED":
                    names.append(event["object"]["metadata"]["name"])
                    if event["object"]["metadata"]["name"] == "watched":
                        return

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        client.request(
            "POST",
            path,
            json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched"}},
        )
        watcher.join(timeout=25)
    assert "watched" in names

    async def async_flow() -> list[str]:
        async with AsyncKubeClient(settings) as aclient:
            listed = await aclient.request("GET", path)
            seen: list[str] = []

            async def follow() -> None:
                params = {
                    "resourceVersion": listed["metadata"]["resourceVersion"],
                    "timeoutSeconds": 20,
                }
                async for event in aclient.watch(path, params):
                    seen.append(event["object"]["metadata"]["name"])
                    return

            task = asyncio.create_task(follow())
            await aclient.request(
                "POST",
                path,
                json={
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "async-watched"},
                },
            )
            await asyncio.wait_for(task, 25)
            return seen

    assert asyncio.run(async_flow()) == ["async-watched"]


def test_sync_watch_layers_list_then_follow_across_server_timeouts(  # type: ignore[no-untyped-def]
    control_plane, namespace: str
) -> None:
    """The driver-pods service's way of following one object, on the real API server:
    a list, then streams that the server ends every 2-3 s, each resumed without a list."""
    path = resource_path("v1", "ConfigMap", namespace)
    spec = WatchSpec(path, {"fieldSelector": "metadata.name=followed"}, timeout_seconds=3)
    stats = WatchStats()
    seen: list[str] = []
    with KubeClient(admin_settings(control_plane)) as client:

        def follow() -> None:
            for item in watch_sync.watch_forever(client, spec, stats):
                if isinstance(item, Listed):
                    seen.append("listed")
                elif isinstance(item, StreamEnded):
                    seen.append("ended")
                else:
                    seen.append(item["type"])
                if seen[-1] == "DELETED":
                    return

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        wait_for(lambda: stats.streams >= 3, 30, "two streams ended by the server's timeout")
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "followed"}}
        client.request("POST", path, json=body)
        client.request("POST", path, json={**body, "metadata": {"name": "not-followed"}})
        wait_for(lambda: "ADDED" in seen, 20, "the ADDED event")
        client.request("DELETE", resource_path("v1", "ConfigMap", namespace, "followed"))
        watcher.join(timeout=20)
    assert not watcher.is_alive()
    assert [kind for kind in seen if kind not in ("BOOKMARK", "ended")] == [
        "listed",
        "ADDED",
        "DELETED",
    ]
    assert seen.count("ended") >= 2  # each stream the server ended said so
    assert stats.lists == 1 and stats.gone == 0 and stats.reconnects == 0


def test_server_side_apply(control_plane, namespace: str) -> None:  # type: ignore[no-untyped-def]
    path = resource_path("v1", "ConfigMap", namespace, "applied")
    body = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "applied"},
            "data": {"k": "v"},
        }
    )
    with KubeClient(admin_settings(control_plane)) as client:
        first, second = (
            client.request(
                "PATCH",
                path,
                content=body,
                content_type=APPLY_PATCH,
                params=apply_params("sparkk8s", force=True),
            )
            for _ in range(2)  # applying twice is idempotent: same object, same data
        )
    assert first["data"] == second["data"] == {"k": "v"}
    assert first["metadata"]["uid"] == second["metadata"]["uid"]
    assert first["metadata"]["managedFields"][0]["manager"] == "sparkk8s"


def test_keep_alive_client_survives_an_apiserver_restart(control_plane) -> None:  # type: ignore[no-untyped-def]
    with KubeClient(admin_settings(control_plane)) as client:
        assert whoami(client) == "admin"
        control_plane.restart_apiserver()
        assert whoami(client) == "admin"  # the pooled connection died; a new one is made


def test_kubeconfig_exec_plugin(control_plane, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plugin = tmp_path / "get-token"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',\n"
        "                  'kind': 'ExecCredential', 'status': {'token': os.environ['TOKEN']}}))\n"
    )
    plugin.chmod(0o700)
    config = {
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": control_plane.server,
                    "certificate-authority": str(control_plane.ca_file),
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "./get-token",
                        "env": [{"name": "TOKEN", "value": control_plane.static_token}],
                    }
                },
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    with KubeClient(kubeconfig_settings(path)) as client:
        assert whoami(client) == "sparkk8s-token-user"


def test_large_lists_come_compressed_and_are_decoded(control_plane, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """The API server gzips answers over 128 KiB for a client that asks; ours asks."""
    settings = admin_settings(control_plane)
    path = resource_path("v1", "ConfigMap", namespace)
    with KubeClient(settings) as client:
        for index in range(3):
            data = {"blob": f"{index}" * 60_000}
            client.request("POST", path, json={"metadata": {"name": f"big-{index}"}, "data": data})
        listed = client.request("GET", path)
    names = sorted(item["metadata"]["name"] for item in listed["items"])
    assert [name for name in names if name.startswith("big-")] == ["big-0", "big-1", "big-2"]
    pool = HttpPool(
        settings.server,
        tls=ssl_context(settings),
        server_name=None,
        connect_timeout=5,
        read_timeout=30,
    )
    try:
        raw = pool.send("GET", path, {}, {"Accept": "application/json"}, None)
    finally:
        pool.close()
    assert raw.headers.get("Content-Encoding") == "gzip"
    assert len(raw.content) > 180_000  # decoded: the three 60 KB values
    assert sorted(item["metadata"]["name"] for item in json.loads(raw.content)["items"]) == names


def test_one_client_serves_many_threads(control_plane) -> None:  # type: ignore[no-untyped-def]
    with KubeClient(admin_settings(control_plane)) as client, ThreadPoolExecutor(8) as pool:
        names = list(pool.map(lambda _: whoami(client), range(64)))
    assert names == ["admin"] * 64
