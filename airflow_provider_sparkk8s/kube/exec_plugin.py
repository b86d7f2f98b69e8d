"""Kubeconfig exec credential plugins (client-go's ExecCredential protocol), as kubectl runs
them: token or client-certificate credentials, `installHint`, `interactiveMode`.

Credentials are cached per plugin configuration (command, arguments, environment, API
version; what client-go keys its authenticator cache on), process-wide and until they
expire, so the operator's, the sensor's and the trigger's clients share one run. The sync
clients run the plugin with `subprocess`; the async client (the triggerer) with an asyncio
subprocess, so a slow plugin never blocks the event loop.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import threading
import time
from dataclasses import field
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.settings import DEFAULT_EXEC_API_VERSION
from airflow_provider_sparkk8s.records import record

if TYPE_CHECKING:
    import asyncio

    from airflow_provider_sparkk8s.kube.settings import ClientSettings

# Refresh this long before expiry, so no request carries a credential that dies in flight.
EXPIRY_MARGIN = 30.0
EXEC_TIMEOUT = 60.0
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
_INSTALL_HELP = (
    "It looks like you are trying to use a client-go credential plugin that is not installed."
)


@record
class ExecPlugin:
    """One plugin configuration; equal configurations share their credentials."""

    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may carry credentials
    api_version: str = DEFAULT_EXEC_API_VERSION
    install_hint: str | None = None
    interactive_mode: str = "IfAvailable"

    @property
    def name(self) -> str:
        return self.command[0]

    @staticmethod
    def of(settings: ClientSettings) -> ExecPlugin:
        assert settings.exec_command is not None
        return ExecPlugin(
            settings.exec_command,
            settings.exec_env,
            settings.exec_api_version,
            settings.exec_install_hint,
            settings.exec_interactive_mode or "IfAvailable",
        )


@record(repr=False)
class ExecCredential:
    token: str | None
    client_cert_data: str | None  # PEM
    client_key_data: str | None  # PEM, secret
    expires_at: float | None  # epoch seconds

    def fresh(self, now: float | None = None) -> bool:
        if self.expires_at is None:
            return True
        return (now or time.time()) < self.expires_at - EXPIRY_MARGIN

    def __repr__(self) -> str:
        return f"ExecCredential(expires_at={self.expires_at})"


class _Cache:
    """Process-wide credentials by plugin configuration; a thread lock and, per event loop,
    an asyncio lock per plugin, so concurrent clients run a plugin once, not once each."""

    def __init__(self) -> None:
        self.credentials: dict[ExecPlugin, ExecCredential] = {}
        self.lock = threading.Lock()
        self.run_locks: dict[ExecPlugin, threading.Lock] = {}
        self.async_locks: dict[tuple[int, ExecPlugin], asyncio.Lock] = {}

    def fresh(self, plugin: ExecPlugin) -> ExecCredential | None:
        with self.lock:
            credential = self.credentials.get(plugin)
        return credential if credential is not None and credential.fresh() else None

    def store(self, plugin: ExecPlugin, credential: ExecCredential) -> None:
        with self.lock:
            self.credentials[plugin] = credential

    def forget(self, plugin: ExecPlugin, credential: ExecCredential | None) -> None:
        """Drop `credential` (refused by the server); a newer one another client got stays."""
        with self.lock:
            if credential is None or self.credentials.get(plugin) is credential:
                self.credentials.pop(plugin, None)

    def run_lock(self, plugin: ExecPlugin) -> threading.Lock:
        with self.lock:
            return self.run_locks.setdefault(plugin, threading.Lock())

    def async_lock(self, plugin: ExecPlugin) -> asyncio.Lock:
        import asyncio

        key = (id(asyncio.get_running_loop()), plugin)
        with self.lock:
            if key not in self.async_locks:
                self.async_locks[key] = asyncio.Lock()
            return self.async_locks[key]


CACHE = _Cache()


def credential_sync(plugin: ExecPlugin) -> ExecCredential:
    """A fresh credential, running the plugin (blocking) only when the cache has none."""
    cached = CACHE.fresh(plugin)
    if cached is not None:
        return cached
    with CACHE.run_lock(plugin):
        cached = CACHE.fresh(plugin)  # another thread may have run it meanwhile
        if cached is not None:
            return cached
        credential = _run_sync(plugin)
        CACHE.store(plugin, credential)
        return credential


async def credential_async(plugin: ExecPlugin) -> ExecCredential:
    """A fresh credential; the plugin runs as an asyncio subprocess, never blocking the loop."""
    cached = CACHE.fresh(plugin)
    if cached is not None:
        return cached
    async with CACHE.async_lock(plugin):
        cached = CACHE.fresh(plugin)
        if cached is not None:
            return cached
        credential = await _run_async(plugin)
        CACHE.store(plugin, credential)
        return credential


def _interactive(plugin: ExecPlugin) -> tuple[bool, Any]:
    """client-go's isInteractive: (interactive?, stdin for the plugin)."""
    mode = plugin.interactive_mode
    if mode not in INTERACTIVE_MODES:
        raise KubeConfigError(
            f"exec credential plugin {plugin.name}: interactiveMode={mode!r} is invalid: "
            f"expected one of {', '.join(INTERACTIVE_MODES)}"
        )
    terminal = sys.stdin is not None and sys.stdin.isatty()
    if mode == "Always" and not terminal:
        raise KubeConfigError(
            f"exec credential plugin {plugin.name} cannot support interactive mode "
            "(interactiveMode: Always): standard input is not a terminal; Airflow workers "
            "and triggerers have none, so use a plugin that logs in without a prompt"
        )
    interactive = mode != "Never" and terminal
    return interactive, (sys.stdin if interactive else None)


def _environment(plugin: ExecPlugin, interactive: bool) -> dict[str, str]:
    """The plugin's environment, as a plain dict: uvloop (uvicorn's loop, in the api-server)
    takes no other mapping. It goes straight into the subprocess call: no frame of ours holds
    it in a local a traceback could show."""
    info = {
        "apiVersion": plugin.api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": interactive},
    }
    return {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}


def _not_found(plugin: ExecPlugin) -> KubeConfigError:
    message = f"exec credential plugin {plugin.name}: executable not found. {_INSTALL_HELP}"
    if plugin.install_hint:
        message += f"\n\n{plugin.install_hint.strip()}"
    return KubeConfigError(message)


def _run_sync(plugin: ExecPlugin) -> ExecCredential:
    import subprocess  # imported here: only exec plugins need it (start-up time)

    interactive, stdin = _interactive(plugin)
    try:
        done = subprocess.run(
            list(plugin.command),
            env=_environment(plugin, interactive),
            stdin=stdin if interactive else subprocess.DEVNULL,
            capture_output=True,
            timeout=EXEC_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise _not_found(plugin) from None
    except (OSError, subprocess.TimeoutExpired) as error:
        raise KubeConfigError(
            f"exec credential plugin {plugin.name} could not run: {error}"
        ) from None
    return _credential(plugin, done.returncode, done.stdout, done.stderr)


async def _run_async(plugin: ExecPlugin) -> ExecCredential:
    import asyncio
    import subprocess

    interactive, stdin = _interactive(plugin)
    try:
        process = await asyncio.create_subprocess_exec(
            *plugin.command,
            env=_environment(plugin, interactive),
            stdin=stdin if interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError:
        raise _not_found(plugin) from None
    except OSError as error:
        raise KubeConfigError(
            f"exec credential plugin {plugin.name} could not run: {error}"
        ) from None
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), EXEC_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise KubeConfigError(
            f"exec credential plugin {plugin.name} did not answer within {EXEC_TIMEOUT:.0f} s"
        ) from None
    except asyncio.CancelledError:
        process.kill()  # the trigger is going away: leave no plugin process behind
        raise
    assert process.returncode is not None
    return _credential(plugin, process.returncode, stdout, stderr)


def _credential(
    plugin: ExecPlugin, returncode: int, stdout: bytes, stderr: bytes
) -> ExecCredential:
    if returncode != 0:
        detail = stderr.decode(errors="replace").strip()[-300:]
        raise KubeConfigError(
            f"exec credential plugin {plugin.name} exited with {returncode}: {detail}"
        )
    return parse_exec_credential(stdout.decode(errors="replace"), plugin.name)


def parse_exec_credential(output: str, name: str) -> ExecCredential:
    """The credential in a plugin's ExecCredential output: a token, a client certificate
    and key, or both."""
    try:
        document = json.loads(output)
    except ValueError:
        raise KubeConfigError(f"exec credential plugin {name} printed no JSON") from None
    status = document.get("status") if isinstance(document, dict) else None
    if not isinstance(status, dict):
        raise KubeConfigError(f"exec credential plugin {name} printed no ExecCredential status")
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if bool(cert) != bool(key):
        missing = "clientKeyData" if cert else "clientCertificateData"
        raise KubeConfigError(f"exec credential plugin {name} returned no {missing}")
    if not token and not cert:
        raise KubeConfigError(
            f"exec credential plugin {name} returned neither a token nor a client certificate"
        )
    return ExecCredential(
        str(token) if token else None,
        str(cert) if cert else None,
        str(key) if key else None,
        _expiry(status.get("expirationTimestamp"), name),
    )


def _expiry(value: Any, name: str) -> float | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        raise KubeConfigError(
            f"exec credential plugin {name} returned expirationTimestamp={value!r}, "
            "expected RFC 3339"
        ) from None
