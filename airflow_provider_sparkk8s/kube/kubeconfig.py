"""Where the client's server, TLS material and credentials come from, resolved once.

Builders of `ClientSettings`, one per source:

- `in_cluster_settings()`: the pod's service-account mount and KUBERNETES_SERVICE_* env;
- `kubeconfig_settings()`: a kubeconfig file (or KUBECONFIG list) or inline content, by context;
- `auto_settings()`: what a bare kubectl / spark-submit would use (KUBECONFIG or ~/.kube/config,
  else in-cluster).

Explicit fields are laid over any of these by `settings.with_overrides()`. The YAML of an
inline kubeconfig, which may hold secrets, never reaches a message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from airflow_provider_sparkk8s.environment import hidden
from airflow_provider_sparkk8s.errors import KubeConfigError
from airflow_provider_sparkk8s.kube.proxy import parse_proxy
from airflow_provider_sparkk8s.kube.settings import (
    DEFAULT_EXEC_API_VERSION,
    ClientSettings,
    require_readable,
)

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

# pathlib, base64 and yaml are imported by the functions that read a kubeconfig or the
# service-account mount: every CLI submission asks `auto_settings` whether there is one,
# and most have none (start-up time). Looking for the files needs only os.path.

SERVICE_ACCOUNT_ROOT = "/var/run/secrets/kubernetes.io/serviceaccount"


# --------------------------------------------------------------------------- in-cluster


def in_cluster_settings(
    environ: Mapping[str, str] | None = None, root: str = SERVICE_ACCOUNT_ROOT
) -> ClientSettings:
    """The pod's own service account: env vars for the server, the standard mount for auth.

    The token is a file source, so projected tokens that the kubelet rotates are picked up.
    """
    environ = hidden(os.environ if environ is None else environ)
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
        from pathlib import Path

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
    from pathlib import Path

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
    environ = hidden(os.environ if environ is None else environ)
    kubeconfig = environ.get("KUBECONFIG")
    missing = unloadable_kubeconfig(environ)
    if kubeconfig:
        named = [path for path in kubeconfig.split(os.pathsep) if path]
        kubeconfig = os.pathsep.join(path for path in named if _exists(path))
    else:
        default = os.path.join(environ.get("HOME", os.path.expanduser("~")), ".kube", "config")
        kubeconfig = default if os.path.isfile(default) else None
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
    if any(_exists(path) for path in paths):
        return []
    return paths


def _exists(path: str) -> bool:
    return os.path.exists(os.path.expanduser(path))


def _parse_inline_kubeconfig(content: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(content, Mapping):
        return dict(content)
    parsed = _parse_yaml(content, "inline kubeconfig")
    if not isinstance(parsed, dict):
        raise KubeConfigError("inline kubeconfig must be a YAML mapping")
    return parsed


def _load_kubeconfig_file(path: str) -> dict[str, Any]:
    from pathlib import Path

    resolved = Path(path).expanduser()
    try:
        text = resolved.read_text()
    except OSError as error:
        raise KubeConfigError(f"cannot read kubeconfig {resolved}: {error.strerror}") from None
    parsed = _parse_yaml(text, f"kubeconfig {resolved}") or {}
    if not isinstance(parsed, dict):
        raise KubeConfigError(f"kubeconfig {resolved} must be a YAML mapping")
    return parsed


def _parse_yaml(text: str, label: str) -> Any:
    import yaml  # here, not at the top: most CLI runs read no kubeconfig

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        # The YAML error quotes the offending text, which may be a secret: keep only the place.
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KubeConfigError(f"{label} is not valid YAML{where}") from None


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

    from pathlib import Path

    def resolve(section: str, name: str | None, value: str | None) -> str | None:
        if not value:
            return None
        directory = _directory_of(section, name, base_dirs, base_dir)
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


def _directory_of(
    section: str,
    name: str | None,
    base_dirs: dict[tuple[str, str], str] | None,
    base_dir: str | None,
) -> str:
    """The directory a kubeconfig entry's relative paths are relative to: its file's."""
    return (base_dirs or {}).get((section, name or ""), base_dir) or os.getcwd()


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
        from pathlib import Path

        command = str(Path(_directory_of("users", user_name, base_dirs, base_dir), command))
    env = tuple((str(e["name"]), str(e.get("value", ""))) for e in plugin.get("env") or [])
    return {
        "exec_command": (command, *(str(arg) for arg in plugin.get("args") or [])),
        "exec_env": env,
        "exec_api_version": plugin.get("apiVersion") or DEFAULT_EXEC_API_VERSION,
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
    from airflow_provider_sparkk8s.kube.exec_plugin import INTERACTIVE_MODES  # as auth.py

    if value not in INTERACTIVE_MODES:
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
    import base64
    import binascii

    try:
        return base64.b64decode(text, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        # Never echo the value: client-key-data is a private key.
        raise KubeConfigError(f"{key} in {where} is not valid base64-encoded PEM") from None
