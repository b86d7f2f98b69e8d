"""The frozen settings a client is built from, and the helpers over their fields.

`ClientSettings` is frozen plain data: paths and PEM text, never sockets or open files.
The sync and async clients both build themselves from it, so every auth mode is written
exactly once. `kube/kubeconfig.py` builds it from a kubeconfig or the in-cluster files;
`with_overrides()` lays explicit fields (server, token, token file, CA, client cert/key,
TLS server name, verify, namespace) over any of those; the explicit field always wins.

spark-submit's own keys (`spark.master`, `spark.kubernetes.authenticate.submission.*`) are
translated in `services/cluster_access/client_settings.py`, on top of these.

Secrets (token, inline client key, inline kubeconfig) never reach `repr`, logs or messages.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.proxy import without_credentials
from airflow_provider_sparkk8s.records import record

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_NAMESPACE = "default"
# The ExecCredential version a kubeconfig exec plugin speaks when it names none.
DEFAULT_EXEC_API_VERSION = "client.authentication.k8s.io/v1"

# Fields whose values are secret: repr shows only whether they are set.
_SECRET_FIELDS = frozenset({"token", "client_key_data"})
# Long PEM blobs that are not secret but make reprs unreadable.
_ELIDED_FIELDS = frozenset({"ca_data", "client_cert_data"})


@record(repr=False)
class ClientSettings:
    """Everything a client needs to reach and authenticate to one API server."""

    server: str
    ca_file: str | None = None
    ca_data: str | None = None  # PEM text
    verify: bool = True
    tls_server_name: str | None = None
    # A kubeconfig cluster's proxy-url: every request goes through it. Without it, the
    # environment's HTTPS_PROXY/HTTP_PROXY/NO_PROXY decide (kube/proxy.py, client-go's rules).
    proxy_url: str | None = None
    client_cert_file: str | None = None
    client_cert_data: str | None = None  # PEM text
    client_key_file: str | None = None
    client_key_data: str | None = None  # PEM text, secret
    token: str | None = None  # secret
    token_file: str | None = None  # re-read when it changes and after a 401
    # A kubeconfig exec credential plugin (command and arguments) that prints a token;
    # run again when the token expires and after a 401.
    exec_command: tuple[str, ...] | None = None
    exec_env: tuple[tuple[str, str], ...] = ()
    exec_api_version: str = DEFAULT_EXEC_API_VERSION
    exec_install_hint: str | None = None  # shown when the plugin's command is not found
    exec_interactive_mode: str | None = None  # Never, IfAvailable (default), Always
    # A kubeconfig `auth-provider: oidc` config (id-token, refresh-token, issuer, ...): the
    # id-token is the bearer token, refreshed with the refresh token (kube/oidc.py).
    oidc_config: tuple[tuple[str, str], ...] = ()
    namespace: str | None = None  # the source's default namespace (connection / context)
    connect_timeout: float = 10.0
    request_timeout: float = 10.0
    source: str = ""  # where these settings came from, for messages (never secret)

    def __post_init__(self) -> None:
        if not self.server.startswith(("https://", "http://")):
            raise KubeConfigError(
                f"API server URL {self.server!r} must start with https:// or http://{self.origin()}"
            )
        if self.token and self.token_file:
            raise KubeConfigError(
                f"both a token and a token file ({self.token_file}) are set{self.origin()}; "
                "keep only one"
            )
        has_cert = bool(self.client_cert_file or self.client_cert_data)
        has_key = bool(self.client_key_file or self.client_key_data)
        if has_cert != has_key:
            missing = "client key" if has_cert else "client certificate"
            raise KubeConfigError(
                f"a client certificate needs its key and vice versa: the {missing} is "
                f"missing{self.origin()}"
            )

    def origin(self) -> str:
        """` (from <source>)` for messages, or nothing when the source is unknown."""
        return f" (from {self.source})" if self.source else ""

    def effective_namespace(self, explicit: str | None = None) -> str:
        """Namespace precedence: the caller's (operator), else ours, else `default`."""
        return explicit or self.namespace or DEFAULT_NAMESPACE

    @property
    def auth_description(self) -> str:
        """How requests authenticate, for messages (names files, never secret values)."""
        parts = []
        if self.token_file:
            parts.append(f"token file {self.token_file}")
        elif self.exec_command:
            parts.append(f"exec plugin {self.exec_command[0]}")
        elif self.token:
            parts.append("bearer token")
        if self.client_cert_file:
            parts.append(f"client certificate {self.client_cert_file}")
        elif self.client_cert_data:
            parts.append("inline client certificate")
        return " and ".join(parts) or "no credentials (anonymous)"

    def __repr__(self) -> str:
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None or value == field.default:
                continue
            if field.name in _SECRET_FIELDS:
                value = "<redacted>"
            elif field.name == "oidc_config":
                value = repr([name for name, _ in value])  # tokens and the client secret
            elif field.name == "exec_env":
                value = repr([name for name, _ in value])  # values may be credentials
            elif field.name == "proxy_url":
                value = repr(without_credentials(value))
            elif field.name in _ELIDED_FIELDS:
                value = "<pem>"
            else:
                value = repr(value)
            shown.append(f"{field.name}={value}")
        return f"ClientSettings({', '.join(shown)})"

    __str__ = __repr__


# Explicit fields that replace a whole group of base fields when given, so that e.g. an
# explicit token is not rejected for clashing with the kubeconfig's token file.
_OVERRIDE_GROUPS: dict[str, tuple[str, ...]] = {
    "token": ("token", "token_file", "exec_command", "oidc_config"),
    "token_file": ("token", "token_file", "exec_command", "oidc_config"),
    "ca_file": ("ca_file", "ca_data"),
    "ca_data": ("ca_file", "ca_data"),
    "client_cert_file": ("client_cert_file", "client_cert_data"),
    "client_cert_data": ("client_cert_file", "client_cert_data"),
    "client_key_file": ("client_key_file", "client_key_data"),
    "client_key_data": ("client_key_file", "client_key_data"),
}


def with_overrides(
    base: ClientSettings | None, overrides: Mapping[str, Any], source: str = ""
) -> ClientSettings:
    """Lay explicit fields (None = not given) over `base`; an explicit field always wins.

    Without a base, `server` must be among the overrides.
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    unknown = set(given) - {f.name for f in dataclasses.fields(ClientSettings)}
    if unknown:
        raise TypeError(f"unknown ClientSettings fields: {sorted(unknown)}")
    if base is None:
        if not given.get("server"):
            raise KubeConfigError(
                f"no API server URL{f' in {source}' if source else ''}: give a server URL, "
                "a kubeconfig or in-cluster mode"
            )
        return ClientSettings(**given, source=source or "explicit settings")
    values = dataclasses.asdict(base)
    for key in given:
        for cleared in _OVERRIDE_GROUPS.get(key, ()):
            values[cleared] = None
    values.update(given)
    if source:
        values["source"] = f"{base.source} + {source}" if base.source else source
    return ClientSettings(**values)


def unreadable_reason(path: str) -> str | None:
    """Why a file we will need cannot be read, or None when it can."""
    if os.access(path, os.R_OK) and os.path.isfile(path):
        return None
    return "does not exist" if not os.path.exists(path) else "is not a readable file"


def require_readable(path: str, what: str) -> None:
    """Fail before any request when a file we will need cannot be read."""
    reason = unreadable_reason(path)
    if reason is not None:
        raise KubeConfigError(f"{what}: {path} {reason}")
