"""Where the client's server, TLS material and credentials come from, resolved once.

`ClientSettings` is frozen plain data: paths and PEM text, never sockets or open files.
The sync and async clients both build themselves from it, so every auth mode is written
exactly once. Builders, one per source:

- `in_cluster_settings()`: the pod's service-account mount and KUBERNETES_SERVICE_* env;
- `kubeconfig_settings()`: a kubeconfig file (or KUBECONFIG list) or inline content, by context;
- `auto_settings()`: what a bare kubectl / spark-submit would use (KUBECONFIG or ~/.kube/config,
  else in-cluster);
- `with_overrides()`: explicit fields (server, token, token file, CA, client cert/key, TLS
  server name, verify, namespace) laid over any of the above; the explicit field always wins.

spark-submit's own keys (`spark.master`, `spark.kubernetes.authenticate.submission.*`) are
translated in `submission/client_settings.py`, on top of these.

Secrets (token, inline client key, inline kubeconfig) never reach `repr`, logs or messages.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.proxy import parse_proxy, without_credentials

SERVICE_ACCOUNT_ROOT = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_NAMESPACE = "default"

# Fields whose values are secret: repr shows only whether they are set.
_SECRET_FIELDS = frozenset({"token", "client_key_data"})
# Long PEM blobs that are not secret but make reprs unreadable.
_ELIDED_FIELDS = frozenset({"ca_data", "client_cert_data"})


@dataclass(frozen=True, repr=False)
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
    exec_api_version: str = "client.authentication.k8s.io/v1"
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


# --------------------------------------------------------------------------- in-cluster


def in_cluster_settings(
    environ: Mapping[str, str] | None = None, root: str = SERVICE_ACCOUNT_ROOT
) -> ClientSettings:
    """The pod's own service account: env vars for the server, the standard mount for auth.

    The token is a file source, so projected tokens that the kubelet rotates are picked up.
    """
    environ = os.environ if environ is None else environ
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError(
            "in-cluster mode needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which "
            "Kubernetes sets only inside a pod"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    token_file = os.path.join(root, "token")
    ca_file = os.path.join(root, "ca.crt")
    require_readable(token_file, "in-cluster service-account token")
    require_readable(ca_file, "in-cluster service-account CA")
    namespace_file = os.path.join(root, "namespace")
    namespace = None
    if os.path.exists(namespace_file):
        namespace = Path(namespace_file).read_text().strip() or None
    return ClientSettings(
        server=f"https://{host}:{port}",
        ca_file=ca_file,
        token_file=token_file,
        namespace=namespace,
        source=f"in-cluster service account ({root})",
    )


# --------------------------------------------------------------------------- kubeconfig


def kubeconfig_settings(
    path: str | os.PathLike[str] | None = None,
    *,
    content: str | Mapping[str, Any] | None = None,
    context: str | None = None,
) -> ClientSettings:
    """Settings from a kubeconfig file (or an os.pathsep-separated list) or inline content.

    Relative file paths inside a kubeconfig are relative to the file that names them
    (to the working directory for inline content).
    """
    if (path is None) == (content is None):
        raise TypeError("give exactly one of path or content")
    if content is not None:
        config = _parse_inline_kubeconfig(content)
        return _settings_from_config(
            config, context, base_dir=os.getcwd(), label="inline kubeconfig"
        )
    paths = [p for p in str(path).split(os.pathsep) if p]
    configs = [(_load_kubeconfig_file(p), str(Path(p).expanduser().parent)) for p in paths]
    merged, base_dirs = _merge_kubeconfigs(configs)
    label = f"kubeconfig {os.pathsep.join(paths)}"
    return _settings_from_config(merged, context, base_dirs=base_dirs, label=label)


def auto_settings(
    environ: Mapping[str, str] | None = None,
    context: str | None = None,
    in_cluster_root: str = SERVICE_ACCOUNT_ROOT,
) -> ClientSettings:
    """What kubectl (and spark-submit's client) would use with no explicit configuration.

    KUBECONFIG (its files that exist, as kubectl skips missing ones), else ~/.kube/config,
    else the in-cluster service account.
    """
    environ = os.environ if environ is None else environ
    kubeconfig = environ.get("KUBECONFIG")
    missing = unloadable_kubeconfig(environ)
    if kubeconfig:
        named = [path for path in kubeconfig.split(os.pathsep) if path]
        kubeconfig = os.pathsep.join(path for path in named if Path(path).expanduser().exists())
    else:
        default = Path(environ.get("HOME", str(Path.home()))) / ".kube" / "config"
        kubeconfig = str(default) if default.is_file() else None
    if kubeconfig:
        return kubeconfig_settings(kubeconfig, context=context)
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_settings(environ, in_cluster_root)
    where = (
        f"KUBECONFIG names {', '.join(missing)}: no such file"
        if missing
        else "no KUBECONFIG, no ~/.kube/config"
    )
    raise KubeConfigError(
        f"no Kubernetes configuration found: {where}, and not inside a pod; configure a "
        "server URL, a kubeconfig or in-cluster mode"
    )


def unloadable_kubeconfig(environ: Mapping[str, str]) -> list[str]:
    """The files KUBECONFIG names when none of them exists, else []. kubectl skips missing
    files and warns "Config not found" when all are; its fallback then names no file."""
    paths = [path for path in (environ.get("KUBECONFIG") or "").split(os.pathsep) if path]
    if any(Path(path).expanduser().exists() for path in paths):
        return []
    return paths


def _parse_inline_kubeconfig(content: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(content, Mapping):
        return dict(content)
    import yaml  # here, not at the top: most CLI runs read no kubeconfig

    try:
        parsed = yaml.safe_load(content)
    except yaml.YAMLError as error:
        # The YAML error quotes the offending text, which may be a secret: keep only the place.
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KubeConfigError(f"inline kubeconfig is not valid YAML{where}") from None
    if not isinstance(parsed, dict):
        raise KubeConfigError("inline kubeconfig must be a YAML mapping")
    return parsed


def _load_kubeconfig_file(path: str) -> dict[str, Any]:
    resolved = Path(path).expanduser()
    try:
        text = resolved.read_text()
    except OSError as error:
        raise KubeConfigError(f"cannot read kubeconfig {resolved}: {error.strerror}") from None
    import yaml

    try:
        parsed = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KubeConfigError(f"kubeconfig {resolved} is not valid YAML{where}") from None
    if not isinstance(parsed, dict):
        raise KubeConfigError(f"kubeconfig {resolved} must be a YAML mapping")
    return parsed


def _merge_kubeconfigs(
    configs: list[tuple[dict[str, Any], str]],
) -> tuple[dict[str, Any], dict[tuple[str, str], str]]:
    """kubectl's merge of a KUBECONFIG list: the first file to define a name wins.

    Also returns, per (section, name), the directory of the file it came from.
    """
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    base_dirs: dict[tuple[str, str], str] = {}
    for config, base_dir in configs:
        if not merged.get("current-context") and config.get("current-context"):
            merged["current-context"] = config["current-context"]
        for section in ("clusters", "users", "contexts"):
            for entry in config.get(section) or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if name is None or (section, name) in base_dirs:
                    continue
                base_dirs[(section, name)] = base_dir
                merged[section].append(entry)
    return merged, base_dirs


def _named(config: dict[str, Any], section: str, name: str, label: str) -> dict[str, Any]:
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(section[:-1])  # clusters -> cluster, ...
            return body if isinstance(body, dict) else {}
    raise KubeConfigError(f"{label} has no {section[:-1]} named {name!r}")


def _settings_from_config(
    config: dict[str, Any],
    context: str | None,
    *,
    label: str,
    base_dir: str | None = None,
    base_dirs: dict[tuple[str, str], str] | None = None,
) -> ClientSettings:
    context_name = context or config.get("current-context")
    if not context_name:
        raise KubeConfigError(f"{label} sets no current-context; name a context")
    ctx = _named(config, "contexts", context_name, label)
    cluster_name = ctx.get("cluster")
    user_name = ctx.get("user")
    if not cluster_name:
        raise KubeConfigError(f"context {context_name!r} in {label} names no cluster")
    cluster = _named(config, "clusters", cluster_name, label)
    user = _named(config, "users", user_name, label) if user_name else {}
    where = f"{label}, context {context_name!r}"

    def resolve(section: str, name: str | None, value: str | None) -> str | None:
        if not value:
            return None
        directory = (base_dirs or {}).get((section, name or ""), base_dir) or os.getcwd()
        return str(Path(directory, os.path.expanduser(value)))

    oidc_config = _oidc_config(user.get("auth-provider"), user_name, where)
    if user.get("username") or user.get("password"):
        raise KubeConfigError(
            f"user {user_name!r} in {where} uses basic auth (username/password), which "
            "Kubernetes no longer supports; use a token or client certificate"
        )
    server = cluster.get("server")
    if not server:
        raise KubeConfigError(f"cluster {cluster_name!r} in {where} has no server")
    token_file = resolve("users", user_name, user.get("tokenFile"))
    if token_file:
        require_readable(token_file, f"tokenFile of user {user_name!r} in {where}")
    return ClientSettings(
        server=str(server).rstrip("/"),
        ca_file=resolve("clusters", cluster_name, cluster.get("certificate-authority")),
        ca_data=_b64_field(cluster, "certificate-authority-data", where),
        verify=not bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy_url=_proxy_url(cluster, where),
        client_cert_file=resolve("users", user_name, user.get("client-certificate")),
        client_cert_data=_b64_field(user, "client-certificate-data", where),
        client_key_file=resolve("users", user_name, user.get("client-key")),
        client_key_data=_b64_field(user, "client-key-data", where),
        token=user.get("token") or None,
        token_file=token_file,
        **_exec_plugin(user.get("exec"), base_dirs, base_dir, user_name, where),
        oidc_config=oidc_config,
        namespace=ctx.get("namespace") or None,
        source=where,
    )


def _exec_plugin(
    plugin: Any,
    base_dirs: dict[tuple[str, str], str] | None,
    base_dir: str | None,
    user_name: str | None,
    where: str,
) -> dict[str, Any]:
    """ClientSettings fields of a kubeconfig `exec` plugin (client-go's ExecConfig)."""
    if not plugin:
        return {}
    if not isinstance(plugin, dict) or not plugin.get("command"):
        raise KubeConfigError(f"the exec plugin of user {user_name!r} in {where} has no command")
    command = str(plugin["command"])
    if os.sep in command and not os.path.isabs(command):
        # client-go: a relative command path is relative to the kubeconfig that names it
        directory = (base_dirs or {}).get(("users", user_name or ""), base_dir) or os.getcwd()
        command = str(Path(directory, command))
    env = tuple((str(e["name"]), str(e.get("value", ""))) for e in plugin.get("env") or [])
    return {
        "exec_command": (command, *(str(arg) for arg in plugin.get("args") or [])),
        "exec_env": env,
        "exec_api_version": plugin.get("apiVersion") or "client.authentication.k8s.io/v1",
        "exec_install_hint": plugin.get("installHint") or None,
        "exec_interactive_mode": _interactive_mode(plugin.get("interactiveMode"), user_name, where),
    }


def _oidc_config(provider: Any, user_name: str | None, where: str) -> tuple[tuple[str, str], ...]:
    """The `oidc` auth-provider's config; gcp and azure were removed from client-go in 1.26."""
    if not provider:
        return ()
    name = provider.get("name") if isinstance(provider, dict) else None
    if name != "oidc":
        raise KubeConfigError(
            f"user {user_name!r} in {where} authenticates with the {name!r} auth-provider, "
            "removed from client-go in 1.26; use its exec plugin (gke-gcloud-auth-plugin, "
            "kubelogin), a token, a token file or a client certificate instead"
        )
    config = provider.get("config") or {}
    return tuple((str(key), str(value)) for key, value in config.items() if value is not None)


def _interactive_mode(value: Any, user_name: str | None, where: str) -> str | None:
    if value in (None, ""):
        return None
    if value not in ("Never", "IfAvailable", "Always"):
        raise KubeConfigError(
            f"the exec plugin of user {user_name!r} in {where}: interactiveMode={value!r} is "
            "invalid: expected Never, IfAvailable or Always"
        )
    return str(value)


def _proxy_url(cluster: dict[str, Any], where: str) -> str | None:
    value = cluster.get("proxy-url")
    if not value:
        return None
    parse_proxy(str(value), "proxy-url", where)  # an unusable proxy fails before any request
    return str(value)


def _b64_field(section: dict[str, Any], key: str, where: str) -> str | None:
    value = section.get(key)
    if not value:
        return None
    # Go's base64 decoder (client-go) and the official Python client skip line breaks:
    # CA data wrapped at 64 or 76 columns is valid.
    text = str(value).replace("\r", "").replace("\n", "")
    try:
        return base64.b64decode(text, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        # Never echo the value: client-key-data is a private key.
        raise KubeConfigError(f"{key} in {where} is not valid base64-encoded PEM") from None


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
