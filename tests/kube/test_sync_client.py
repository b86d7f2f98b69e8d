"""KubeClient / AsyncKubeClient against a scripted local HTTP(S) server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError, KubeConfigError, KubeConnectionError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.paths import apply_params
from airflow_provider_sparkk8s.kube.request import APPLY_PATCH
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from tests.kube.fakeapi import FakeApiServer, Recorded, Reply, scripted
from tests.kube.tlsfiles import SERVER_NAME, Pki

SECRET = "planted-secret-token-7f3a9c"
FAST = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05, max_retry_after=0.2)


def plain(server: FakeApiServer, **fields: object) -> ClientSettings:
    return ClientSettings(server=server.url, **fields)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- requests


def test_request_sends_body_params_headers_and_reuses_one_connection() -> None:
    with (
        FakeApiServer(scripted(then=Reply(201, {"kind": "Pod"}))) as server,
        KubeClient(plain(server, token=SECRET)) as client,
    ):
        for _ in range(5):
            result = client.request(
                "POST", "/api/v1/namespaces/ns/pods", json={"kind": "Pod"}, params={"a": "b"}
            )
        applied = client.request(
            "PATCH",
            "/api/v1/namespaces/ns/configmaps/c",
            content="kind: ConfigMap",
            content_type=APPLY_PATCH,
            params=apply_params("sparkk8s", force=True),
        )
    assert result == {"kind": "Pod"} and applied == {"kind": "Pod"}
    first = server.requests[0]
    assert (first.method, first.path, first.params) == (
        "POST",
        "/api/v1/namespaces/ns/pods",
        {"a": "b"},
    )
    assert json.loads(first.body) == {"kind": "Pod"}
    assert first.headers["authorization"] == f"Bearer {SECRET}"
    assert first.headers["content-type"] == "application/json"
    last = server.requests[-1]
    assert last.params == {"fieldManager": "sparkk8s", "force": "true"}
    assert last.headers["content-type"] == APPLY_PATCH and last.body == b"kind: ConfigMap"
    assert len({r.client_port for r in server.requests}) == 1, "keep-alive: one connection"


def test_get_retries_503_then_succeeds() -> None:
    handler = scripted(
        Reply.status_body(503, "ServiceUnavailable", "busy"),
        Reply(502, b"bad gateway"),
        then=Reply(200, {"ok": True}),
    )
    with FakeApiServer(handler) as server, KubeClient(plain(server), FAST) as client:
        assert client.request("GET", "/api/v1/namespaces/ns/pods") == {"ok": True}
    assert len(server.requests) == 3


def test_post_is_not_retried_on_5xx() -> None:
    handler = scripted(Reply.status_body(503, "ServiceUnavailable", "busy"))
    with (
        FakeApiServer(handler) as server,
        KubeClient(plain(server), FAST) as client,
        pytest.raises(KubeApiError) as caught,
    ):
        client.request("POST", "/api/v1/namespaces/ns/pods", json={})
    assert caught.value.status == 503 and caught.value.reason == "ServiceUnavailable"
    assert len(server.requests) == 1


def test_429_is_retried_even_for_post_after_retry_after() -> None:
    throttled = Reply.status_body(429, "TooManyRequests", "slow down")
    throttled.headers["Retry-After"] = "0.15"
    with (
        FakeApiServer(scripted(throttled, then=Reply(201, {"created": 1}))) as server,
        KubeClient(plain(server), FAST) as client,
    ):
        started = time.monotonic()
        assert client.request("POST", "/api/v1/namespaces/ns/pods", json={}) == {"created": 1}
        waited = time.monotonic() - started
    assert len(server.requests) == 2
    assert waited >= 0.15


def test_retries_are_bounded() -> None:
    always = scripted(then=Reply.status_body(500, "InternalError", "etcd down"))
    with (
        FakeApiServer(always) as server,
        KubeClient(plain(server), FAST) as client,
        pytest.raises(KubeApiError) as caught,
    ):
        client.request("GET", "/api/v1/namespaces/ns/pods")
    assert len(server.requests) == FAST.attempts
    assert "etcd down" in str(caught.value) and caught.value.status == 500


def test_404_raises_with_status_body() -> None:
    missing = Reply.status_body(404, "NotFound", 'pods "p" not found')
    with (
        FakeApiServer(scripted(missing)) as server,
        KubeClient(plain(server), FAST) as client,
        pytest.raises(KubeApiError) as caught,
    ):
        client.request("GET", "/api/v1/namespaces/ns/pods/p")
    error = caught.value
    assert (error.status, error.reason, error.method) == (404, "NotFound", "GET")
    assert error.path == "/api/v1/namespaces/ns/pods/p"
    assert error.body["code"] == 404
    assert len(server.requests) == 1


def test_403_names_the_denied_verb_and_resource() -> None:
    denied = Reply.status_body(403, "Forbidden", "forbidden")
    with FakeApiServer(scripted(then=denied)) as server, KubeClient(plain(server)) as client:
        with pytest.raises(KubeApiError) as create:
            client.request(
                "POST", "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies", json={}
            )
        with pytest.raises(KubeApiError) as logs:
            client.text("/api/v1/namespaces/ns/pods/driver/log")
        with pytest.raises(KubeApiError) as watch:
            list(client.watch("/api/v1/namespaces/ns/pods"))
    assert "create networkpolicies.networking.k8s.io in namespace 'ns'" in str(create.value)
    assert "get pods/log in namespace 'ns'" in str(logs.value)
    assert "watch pods in namespace 'ns'" in str(watch.value)


def test_403_names_the_permission_rbac_refused_and_none_for_a_quota() -> None:
    """A server-side apply of a new object is checked as `create`: the refusal's own words
    win over the request's verb. A quota's 403 is no missing permission."""
    rbac = Reply.status_body(
        403,
        "Forbidden",
        'configmaps "c" is forbidden: User "system:serviceaccount:ns:airflow" cannot create '
        'resource "configmaps" in API group "" in the namespace "ns"',
    )
    quota = Reply.status_body(
        403,
        "Forbidden",
        'configmaps "c" is forbidden: exceeded quota: q, requested: count/configmaps=1, '
        "used: count/configmaps=1, limited: count/configmaps=1",
    )
    apply = "/api/v1/namespaces/ns/configmaps/c"
    with FakeApiServer(scripted(rbac, quota)) as server, KubeClient(plain(server)) as client:
        with pytest.raises(KubeApiError) as denied:
            client.request("PATCH", apply, json={}, content_type="application/apply-patch+yaml")
        with pytest.raises(KubeApiError) as full:
            client.request("PATCH", apply, json={}, content_type="application/apply-patch+yaml")
    assert "missing permission to create configmaps in namespace 'ns'" in str(denied.value)
    assert "missing permission" not in str(full.value) and "exceeded quota" in str(full.value)
    assert denied.value.missing_permission == "create configmaps in namespace 'ns'"
    assert full.value.missing_permission == ""


def test_connection_refused_is_retried_then_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with FakeApiServer(scripted()) as server:
        url = server.url  # the port is free again once the server stops
    with (
        KubeClient(ClientSettings(server=url), FAST) as client,
        pytest.raises(KubeConnectionError) as caught,
    ):
        client.request("POST", "/api/v1/namespaces/ns/pods", json={})
    assert url in str(caught.value)
    retries = [r for r in caplog.records if "ConnectError; retry" in r.getMessage()]
    assert len(retries) == FAST.attempts - 1


def test_non_json_error_body_is_reported_truncated() -> None:
    html = Reply(502, b"<html>" + b"x" * 1000)
    with (
        FakeApiServer(scripted(then=html)) as server,
        KubeClient(plain(server), FAST) as client,
        pytest.raises(KubeApiError) as caught,
    ):
        client.request("GET", "/version")
    assert caught.value.status == 502 and len(caught.value.api_message) <= 300


# --------------------------------------------------------------------------- tokens


def test_token_file_is_reread_when_replaced(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    with (
        FakeApiServer(scripted()) as server,
        KubeClient(plain(server, token_file=str(token_file))) as client,
    ):
        client.request("GET", "/version")
        replacement = tmp_path / "token.new"
        replacement.write_text("second-token")
        os.replace(replacement, token_file)  # atomic swap, as the kubelet does
        client.request("GET", "/version")
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer first-token",
        "Bearer second-token",
    ]


def test_401_rereads_the_token_file_and_retries_once(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("old-token")

    def handler(request: Recorded) -> Reply:
        if request.headers.get("authorization") == "Bearer new-token":
            return Reply(200, {"ok": True})
        # The first request finds the token rotated behind the client's back, with the
        # same size and mtime, so only the 401 can reveal it.
        stat = os.stat(token_file)
        token_file.write_text("new-token")
        os.utime(token_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return Reply.status_body(401, "Unauthorized", "Unauthorized")

    with (
        FakeApiServer(handler) as server,
        KubeClient(plain(server, token_file=str(token_file)), FAST) as client,
    ):
        assert client.request("POST", "/api/v1/namespaces/ns/pods", json={}) == {"ok": True}
    assert len(server.requests) == 2


def test_401_with_static_token_is_clear_and_secret_free(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    unauthorized = Reply.status_body(401, "Unauthorized", "Unauthorized")
    with (
        FakeApiServer(scripted(then=unauthorized)) as server,
        KubeClient(plain(server, token=SECRET), FAST) as client,
    ):
        with pytest.raises(KubeApiError) as caught:
            client.request("GET", "/api/v1/namespaces/ns/pods")
        assert SECRET not in repr(client.settings)
    assert len(server.requests) == 1
    message = str(caught.value)
    assert "401" in message and "rejected the credentials (bearer token" in message
    assert SECRET not in message and SECRET not in repr(caught.value.__dict__)
    assert SECRET not in caplog.text


def test_unreadable_token_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    with (
        FakeApiServer(scripted()) as server,
        KubeClient(plain(server, token_file=str(missing))) as c,
        pytest.raises(KubeConfigError, match=str(missing)),
    ):
        c.request("GET", "/version")
    assert server.requests == []


# --------------------------------------------------------------------------- watch


def test_watch_streams_events_with_watch_params() -> None:
    events = [{"type": "ADDED", "object": {"metadata": {"name": f"p{i}"}}} for i in range(3)]
    events.append({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
    chunks = [json.dumps(e).encode() + b"\n" for e in events]
    chunks[1:3] = [chunks[1][:10], chunks[1][10:] + chunks[2]]  # a line split across chunks
    with (
        FakeApiServer(scripted(Reply(200, chunks=chunks))) as server,
        KubeClient(plain(server)) as client,
    ):
        got = list(
            client.watch(
                "/api/v1/namespaces/ns/pods", {"resourceVersion": "5", "timeoutSeconds": 30}
            )
        )
    assert got == events
    assert server.requests[0].params == {
        "resourceVersion": "5",
        "timeoutSeconds": "30",
        "watch": "1",
        "allowWatchBookmarks": "true",
    }


async def test_async_client_request_watch_and_retry() -> None:
    events = [{"type": "MODIFIED", "object": {"kind": "Pod"}}]
    handler = scripted(
        Reply.status_body(503, "ServiceUnavailable", "busy"),
        Reply(200, {"major": "1"}),
        Reply(200, chunks=[json.dumps(e).encode() + b"\n" for e in events]),
    )
    with FakeApiServer(handler) as server:
        async with AsyncKubeClient(plain(server, token=SECRET), FAST) as client:
            assert await client.version() == {"major": "1"}
            assert [e async for e in client.watch("/api/v1/pods")] == events
    assert len(server.requests) == 3
    assert server.requests[-1].params["watch"] == "1"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_async_list_goes_through_the_view_while_the_loop_keeps_running() -> None:
    from airflow_provider_sparkk8s.kube.decoding import ITEMS_PER_STEP

    items = [{"metadata": {"name": f"p{i}"}, "spec": {"big": "x" * 100}} for i in range(1000)]
    body = {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": items}
    ticks = 0

    async def ticking() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    with FakeApiServer(scripted(Reply(200, body))) as server:
        async with AsyncKubeClient(plain(server)) as client:
            ticker = asyncio.create_task(ticking())
            await asyncio.sleep(0)
            ticks = 0
            listed = await client.request(
                "GET", "/api/v1/pods", each_item=lambda pod: pod["metadata"]
            )
            ticker.cancel()
    assert listed == {**body, "items": [item["metadata"] for item in items]}
    assert ticks >= 1000 // ITEMS_PER_STEP  # the other task ran between steps of the decoding


async def test_async_403_names_permission() -> None:
    denied = Reply.status_body(403, "Forbidden", "nope")
    with FakeApiServer(scripted(then=denied)) as server:
        async with AsyncKubeClient(plain(server)) as client:
            with pytest.raises(KubeApiError, match="delete pods in namespace 'x'"):
                await client.request("DELETE", "/api/v1/namespaces/x/pods/p")


# --------------------------------------------------------------------------- TLS


def tls_settings(server: FakeApiServer, pki: Pki, **fields: object) -> ClientSettings:
    values: dict[str, object] = {"ca_file": pki.ca_file, "tls_server_name": SERVER_NAME}
    values.update(fields)
    return ClientSettings(server=server.url, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize("inline", [False, True], ids=["files", "inline"])
def test_client_certificate_files_and_inline(pki: Pki, inline: bool) -> None:
    if inline:
        creds = {
            "client_cert_data": pki.read("client_cert_file"),
            "client_key_data": pki.read("client_key_file"),
            "ca_file": None,
            "ca_data": pki.read("ca_file"),
        }
    else:
        creds = {"client_cert_file": pki.client_cert_file, "client_key_file": pki.client_key_file}
    temp_before = set(os.listdir(tempfile.gettempdir()))
    with (
        FakeApiServer(scripted(), tls=pki.server_context(require_client_cert=True)) as server,
        KubeClient(tls_settings(server, pki, **creds)) as client,
    ):
        assert client.request("GET", "/version") == {}
    leftovers = {
        n for n in set(os.listdir(tempfile.gettempdir())) - temp_before if n.startswith("sparkk8s-")
    }
    assert leftovers == set(), "inline PEM temp files must be removed"


def test_wrong_ca_gives_a_clear_tls_error_without_retries(pki: Pki) -> None:
    with (
        FakeApiServer(scripted(), tls=pki.server_context(False)) as server,
        KubeClient(tls_settings(server, pki, ca_file=pki.other_ca_file), FAST) as client,
    ):
        started = time.monotonic()
        with pytest.raises(KubeConnectionError) as caught:
            client.request("GET", "/version")
    message = str(caught.value)
    assert (
        "TLS verification" in message and "certificate verify failed" in message.lower()
    ) or "unable to get local issuer" in message
    assert pki.other_ca_file in message
    assert time.monotonic() - started < 2


def test_tls_server_name_is_used_for_verification(pki: Pki) -> None:
    with FakeApiServer(scripted(), tls=pki.server_context(False)) as server:
        with KubeClient(tls_settings(server, pki)) as client:
            assert client.version() == {}
        with (
            KubeClient(tls_settings(server, pki, tls_server_name=None), FAST) as client,
            pytest.raises(KubeConnectionError, match="TLS verification"),
        ):
            client.version()


def test_insecure_skip_verify_works_and_warns_at_every_client(
    pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeApiServer(scripted(), tls=pki.server_context(False)) as server:
        settings = ClientSettings(server=server.url, verify=False)
        for _ in range(2):
            with KubeClient(settings) as client:
                assert client.version() == {}
    warnings = [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and "TLS verification is OFF" in r.getMessage()
    ]
    assert len(warnings) == 2


def test_bad_inline_key_is_reported_without_its_content(pki: Pki) -> None:
    bad_key = "-----BEGIN PRIVATE KEY-----\n" + SECRET + "\n-----END PRIVATE KEY-----\n"
    settings = ClientSettings(
        server="https://127.0.0.1:1",
        client_cert_file=pki.client_cert_file,
        client_key_data=bad_key,
        ca_file=pki.ca_file,
    )
    with pytest.raises(KubeConfigError) as caught:
        KubeClient(settings)
    assert "inline client key" in str(caught.value) and SECRET not in str(caught.value)
    assert isinstance(ssl.SSLContext, type)


# --------------------------------------------------------------------------- exec plugin

PLUGIN = """#!{python}
import json, os, pathlib, sys
count = pathlib.Path(os.environ["COUNT_FILE"])
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
if os.environ.get("FAIL"):
    sys.exit("plugin says: not logged in")
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
status = {{"token": "exec-token-%d" % n}}
if os.environ.get("EXPIRY"):
    status["expirationTimestamp"] = os.environ["EXPIRY"]
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}}))
"""


def exec_settings(server: FakeApiServer, tmp_path: Path, **env: str) -> ClientSettings:
    tmp_path.mkdir(exist_ok=True)
    plugin = tmp_path / "plugin"
    plugin.write_text(PLUGIN.format(python=sys.executable))
    plugin.chmod(0o755)
    env = {"COUNT_FILE": str(tmp_path / "count"), **env}
    return ClientSettings(
        server=server.url, exec_command=(str(plugin),), exec_env=tuple(env.items())
    )


def test_exec_plugin_token_is_cached_until_it_expires(tmp_path: Path) -> None:
    with FakeApiServer(scripted()) as server:
        far = "2999-01-01T00:00:00Z"
        with KubeClient(exec_settings(server, tmp_path / "far", EXPIRY=far)) as client:
            client.version()
            client.version()
        soon = "2000-01-01T00:00:00Z"  # already expired: the plugin runs for every request
        with KubeClient(exec_settings(server, tmp_path / "soon", EXPIRY=soon)) as client:
            client.version()
            client.version()
    tokens = [r.headers["authorization"] for r in server.requests]
    assert tokens == [
        "Bearer exec-token-1",
        "Bearer exec-token-1",
        "Bearer exec-token-1",
        "Bearer exec-token-2",
    ]


def test_exec_plugin_runs_again_after_a_401(tmp_path: Path) -> None:
    def handler(request: Recorded) -> Reply:
        if request.headers["authorization"] == "Bearer exec-token-1":
            return Reply.status_body(401, "Unauthorized", "Unauthorized")
        return Reply(200, {"ok": True})

    with FakeApiServer(handler) as server, KubeClient(exec_settings(server, tmp_path)) as client:
        assert client.request("POST", "/api/v1/namespaces/n/pods", json={}) == {"ok": True}
    assert len(server.requests) == 2


def test_exec_plugin_failure_is_reported(tmp_path: Path) -> None:
    failing = "exited with 1: plugin says: not logged in"
    with (
        FakeApiServer(scripted()) as server,
        KubeClient(exec_settings(server, tmp_path, FAIL="1")) as client,
        pytest.raises(KubeConfigError, match=failing),
    ):
        client.version()
    assert server.requests == []


def test_importing_the_async_client_skips_httpx_command_line_client() -> None:
    code = (
        "import sys, airflow_provider_sparkk8s.kube.async_client as c, httpx; "
        "print(sorted(m for m in ('click', 'rich', 'pygments') if m in sys.modules)); "
        "print(httpx.AsyncClient is c.httpx.AsyncClient)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "True"]


def test_the_command_line_path_imports_no_httpx_asyncio_or_yaml() -> None:
    """sparkk8s-submit's start-up is most of its wall time; these three cost ~200 ms."""
    code = (
        "import sys, airflow_provider_sparkk8s.cli.submit; "
        "print(sorted(m for m in ('httpx', 'httpcore', 'asyncio', 'yaml') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]"]
