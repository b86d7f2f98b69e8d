"""SparkK8sHook: an Airflow connection -> ClientSettings -> KubeClient / AsyncKubeClient.

Precedence of the connection's auth sources (documented in the connection form too):

1. the base, at most one of: `in_cluster` (the pod's service account), inline
   `kube_config_secret`, `kube_config_path` (with `cluster_context`, else the kubeconfig's
   current context);
   with none of them and no API server URL, what kubectl would use (KUBECONFIG,
   ~/.kube/config, else in-cluster);
2. explicit fields laid over that base, each winning over what the base says: the API
   server URL (host), `token` or `token_file`, `ca_cert_file` / `ca_cert_data`,
   `client_cert_*` / `client_key_file` / `client_private_key`, `tls_server_name`,
   `insecure_skip_tls_verify`.

Namespace: the operator's, else the connection's `namespace`, else the kubeconfig context's
(or the in-cluster namespace file), else `default`.

Platform policy (docs/policy.md): the connection's `policy` extra (an object, or JSON text
from the form), else Airflow's `[sparkk8s] policy`; neither: no policy.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_sparkk8s.application.policy.platform_policy import Policy, policy_from_value
from airflow_provider_sparkk8s.errors import KubeConfigError, SparkConfError, SparkK8sError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.kubeconfig import (
    SERVICE_ACCOUNT_ROOT,
    auto_settings,
    in_cluster_settings,
    kubeconfig_settings,
)
from airflow_provider_sparkk8s.kube.paths import Access, resource_path
from airflow_provider_sparkk8s.kube.settings import ClientSettings, require_readable, with_overrides
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.provider_info import (
    CONN_TYPE,
    DEFAULT_CONN_ID,
    HOOK_NAME,
    SPARK_K8S_CONNECTION,
)
from airflow_provider_sparkk8s.services.cluster_access.permissions import (
    CONDITIONAL_PERMISSIONS,
    REQUIRED_ACCESS,
    Permission,
)
from airflow_provider_sparkk8s.submission.conf_values import parse_bool
from airflow_provider_sparkk8s.version_compat import (
    BaseHook,
    aget_connection_extra,
    amask_secrets,
    conf,
    mask_secret,
)

_PREFIX = f"extra__{CONN_TYPE}__"

# Extras whose value is a secret: masked in task logs. Airflow's REST API and edit form hide
# an extra by its NAME only (a substring such as "secret", "private_key", "token"), not by its
# format: password, so every name here must contain one of those substrings.
SECRET_EXTRAS = tuple(
    name
    for name, field in SPARK_K8S_CONNECTION["conn-fields"].items()
    if field["schema"].get("format") == "password"
)

# Former names of secret extras, which Airflow returned in clear -> their current names.
RENAMED_EXTRAS = {"kube_config": "kube_config_secret", "client_key_data": "client_private_key"}

# extra field -> ClientSettings field, for the explicit overrides of step 2.
_FILE_EXTRAS = {
    "token_file": "token_file",
    "ca_cert_file": "ca_file",
    "client_cert_file": "client_cert_file",
    "client_key_file": "client_key_file",
}
_PEM_EXTRAS = {
    "ca_cert_data": "ca_data",
    "client_cert_data": "client_cert_data",
    "client_private_key": "client_key_data",
}


def connection_extras(extra: Mapping[str, Any]) -> dict[str, Any]:
    """Extras without the `extra__spark_k8s__` prefix older UIs wrote; empty values dropped."""
    extras: dict[str, Any] = {}
    for key, value in extra.items():
        name = key.removeprefix(_PREFIX)
        if value not in (None, ""):
            extras.setdefault(name, value)
    return extras


def settings_from_connection(
    conn_id: str,
    host: str | None,
    port: int | None,
    extra: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    in_cluster_root: str = SERVICE_ACCOUNT_ROOT,
) -> ClientSettings:
    """ClientSettings from a connection's fields, by the precedence in the module docstring."""
    extras = connection_extras(extra)
    label = f"connection {conn_id!r}"
    _reject_renamed(extras, label)
    server = _server_url(host, port)
    bases = ["in_cluster"] if _flag(extras, "in_cluster", label) else []
    bases += [name for name in ("kube_config_secret", "kube_config_path") if extras.get(name)]
    if len(bases) > 1:
        raise KubeConfigError(
            f"{label} sets {' and '.join(bases)}; choose one of in_cluster, kube_config_secret "
            "and kube_config_path"
        )
    context = extras.get("cluster_context") or None
    base: ClientSettings | None
    if bases == ["in_cluster"]:
        base = in_cluster_settings(environ, in_cluster_root)
    elif bases == ["kube_config_secret"]:
        inline = extras["kube_config_secret"]
        base = kubeconfig_settings(content=inline, context=context)
    elif bases == ["kube_config_path"]:
        base = kubeconfig_settings(
            os.path.expanduser(str(extras["kube_config_path"])), context=context
        )
    elif not server and not _has_credentials(extras):
        base = auto_settings(environ, context, in_cluster_root)
    else:
        base = None

    overrides: dict[str, Any] = {
        "server": server,
        "token": extras.get("token"),
        "tls_server_name": extras.get("tls_server_name"),
        "namespace": extras.get("namespace"),
    }
    for extra_name, field in _FILE_EXTRAS.items():
        path = extras.get(extra_name)
        if path:
            path = os.path.expanduser(str(path))
            require_readable(path, f"{label}: {extra_name}")
        overrides[field] = path
    for extra_name, field in _PEM_EXTRAS.items():
        overrides[field] = _pem(extras.get(extra_name), extra_name, label)
    if _flag(extras, "insecure_skip_tls_verify", label):
        overrides["verify"] = False
    return with_overrides(base, overrides, source=label)


POLICY_EXTRA = "policy"
POLICY_SECTION, POLICY_OPTION = "sparkk8s", "policy"


def policy_from_connection(
    conn_id: str, extra: Mapping[str, Any], configured: str | None
) -> Policy | None:
    """The connection's `policy` extra, else the `[sparkk8s] policy` text; None: no policy."""
    value = connection_extras(extra).get(POLICY_EXTRA)
    if value not in (None, "", {}):
        return policy_from_value(value, f"connection {conn_id!r} (extra {POLICY_EXTRA})")
    return policy_from_value(configured, f"[{POLICY_SECTION}] {POLICY_OPTION}")


def configured_policy() -> str | None:
    """`[sparkk8s] policy` from Airflow's config (None when unset)."""
    return conf.get(POLICY_SECTION, POLICY_OPTION, fallback=None)


def _reject_renamed(extras: Mapping[str, Any], label: str) -> None:
    """A connection still using a former secret name fails loudly instead of being ignored."""
    stale = sorted(name for name in RENAMED_EXTRAS if extras.get(name))
    if stale:
        renames = ", ".join(f"{name} -> {RENAMED_EXTRAS[name]}" for name in stale)
        # Names only: the values are secrets.
        raise KubeConfigError(
            f"{label}: rename the extra(s) {renames}; Airflow shows values under the old "
            "names in clear"
        )


def _server_url(host: str | None, port: int | None) -> str | None:
    if not host:
        return None
    url = host.strip().rstrip("/")
    if "://" not in url:
        url = f"https://{url}"
    if port and url.count(":") < 2:  # scheme's colon only: no port in the host field
        url = f"{url}:{port}"
    return url


def _has_credentials(extras: Mapping[str, Any]) -> bool:
    return any(extras.get(name) for name in ("token", *_FILE_EXTRAS, *_PEM_EXTRAS))


def _flag(extras: Mapping[str, Any], name: str, label: str) -> bool:
    """A boolean extra: the form's checkbox gives a bool, JSON may give Spark's spelling."""
    value = extras.get(name, False)
    if isinstance(value, bool):
        return value
    try:
        return parse_bool(name, str(value))
    except SparkConfError:
        raise KubeConfigError(
            f"{label}: {name}={value!r} is invalid: expected true or false"
        ) from None


def _pem(value: Any, name: str, label: str) -> str | None:
    """Inline PEM as text; base64-encoded PEM (kubeconfig style) is accepted too."""
    if not value:
        return None
    text = str(value).strip()
    if "-----BEGIN" in text:
        return text + "\n"
    try:
        decoded = base64.b64decode(text, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        decoded = ""
    if "-----BEGIN" not in decoded:
        # Never echo the value: client_private_key is a private key.
        raise KubeConfigError(f"{label}: {name} is neither PEM nor base64-encoded PEM")
    return decoded


def access_review(access: Access, namespace: str) -> dict:
    """The SelfSubjectAccessReview asking whether we may do `access` in `namespace`."""
    attributes = Access(
        access.verb, access.resource, access.group, access.subresource, namespace
    ).resource_attributes()
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }


def connection_report(
    server: str,
    version: Mapping[str, Any],
    namespace: str,
    denied: list[Access],
    conditional_denied: Sequence[Permission] = (),
) -> tuple[bool, str]:
    """test_connection's verdict and message from what the server answered: fails when any
    permission every submission needs is denied; the feature-dependent ones are named but do
    not fail it."""
    reached = f"Kubernetes {version.get('gitVersion', '(unknown version)')} at {server}"
    if not denied:
        message = (
            f"Connected to {reached}; all {len(REQUIRED_ACCESS)} permissions the provider needs "
            f"are granted in namespace {namespace!r}."
        )
    else:
        missing = ", ".join(access.describe() for access in denied)
        message = (
            f"Connected to {reached}, but {len(denied)} of {len(REQUIRED_ACCESS)} permissions "
            f"are missing in namespace {namespace!r}: {missing}. See docs/rbac.yaml for the Role."
        )
    if conditional_denied:
        named = "; ".join(
            f"{p.access.describe()} (for {p.needed_only_for})" for p in conditional_denied
        )
        message += f" Not granted, needed only by some applications: {named}."
    return not denied, message


class SparkK8sHook(BaseHook):
    """Kubernetes API clients for Spark applications, from a `spark_k8s` connection.

    :param kubernetes_conn_id: the Airflow connection (type `spark_k8s`).
    :param namespace: the operator's namespace; wins over the connection's.
    """

    conn_name_attr = "kubernetes_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = HOOK_NAME

    def __init__(
        self,
        kubernetes_conn_id: str = default_conn_name,
        namespace: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.kubernetes_conn_id = kubernetes_conn_id
        self.namespace = namespace
        self._settings: ClientSettings | None = None
        self._client: KubeClient | None = None

    # ------------------------------------------------------------------ settings

    def get_settings(self) -> ClientSettings:
        if self._settings is None:
            conn = self.get_connection(self.kubernetes_conn_id)
            extra = conn.extra_dejson
            self._mask(extra)
            self._settings = settings_from_connection(
                self.kubernetes_conn_id, conn.host, conn.port, extra
            )
            self._mask_settings(self._settings)
        return self._settings

    async def aget_settings(self) -> ClientSettings:
        """As get_settings, without blocking the triggerer's event loop on the connection."""
        if self._settings is None:
            conn, extra = await aget_connection_extra(self, self.kubernetes_conn_id)
            await amask_secrets(_secret_extras(extra))
            settings = settings_from_connection(
                self.kubernetes_conn_id, conn.host, conn.port, extra
            )
            await amask_secrets(_secret_settings(settings))
            self._settings = settings
        return self._settings

    def get_policy(self) -> Policy | None:
        """The platform policy submissions through this connection must keep."""
        extra = self.get_connection(self.kubernetes_conn_id).extra_dejson
        return policy_from_connection(self.kubernetes_conn_id, extra, configured_policy())

    def get_namespace(self) -> str:
        """The operator's namespace, else the connection's, else the context's, else default."""
        return self.get_settings().effective_namespace(self.namespace)

    # ------------------------------------------------------------------ clients

    def get_conn(self) -> KubeClient:
        return self.get_client()

    def get_client(self) -> KubeClient:
        """The sync client, created once per hook and reused (keep-alive connections)."""
        if self._client is None:
            self._client = KubeClient(self.get_settings())
        return self._client

    async def get_async_client(self) -> AsyncKubeClient:
        """A new async client bound to the running event loop; the caller closes it."""
        return AsyncKubeClient(await self.aget_settings())

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # ------------------------------------------------------------------ test_connection

    def test_connection(self) -> tuple[bool, str]:
        """Reach the server, then ask (SelfSubjectAccessReview) for every permission of
        services/cluster_access/permissions.py: each request the operator, sensor, trigger, CLI and
        clean-up make."""
        try:
            client = self.get_client()
            namespace = self.get_namespace()
            version = client.version()
            denied = [
                access for access in REQUIRED_ACCESS if not self._allowed(client, access, namespace)
            ]
            conditional_denied = [
                permission
                for permission in CONDITIONAL_PERMISSIONS
                if not self._allowed(client, permission.access, namespace)
            ]
        except SparkK8sError as error:
            return False, str(error)
        return connection_report(
            client.settings.server, version, namespace, denied, conditional_denied
        )

    @staticmethod
    def _allowed(client: KubeClient, access: Access, namespace: str) -> bool:
        path = resource_path("authorization.k8s.io/v1", "SelfSubjectAccessReview", None)
        review = client.request("POST", path, json=access_review(access, namespace))
        return bool(review.get("status", {}).get("allowed"))

    # ------------------------------------------------------------------ masking

    @staticmethod
    def _mask(extra: Mapping[str, Any]) -> None:
        """Register secret extras with Airflow's log masker, whatever their key names."""
        for value in _secret_extras(extra):
            mask_secret(value)

    @staticmethod
    def _mask_settings(settings: ClientSettings) -> None:
        for value in _secret_settings(settings):
            mask_secret(value)

    # ------------------------------------------------------------------ the form (Airflow < 3.2)

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """Airflow < 3.2 builds the form from this; 3.2+ reads provider_info's conn-fields.

        Generated from those conn-fields, so the two forms cannot drift apart.
        """
        from wtforms import BooleanField, PasswordField, StringField

        try:
            from flask_appbuilder.fieldwidgets import BS3PasswordFieldWidget, BS3TextFieldWidget
            from flask_babel import lazy_gettext
        except ImportError:  # no FAB UI: wtforms' own widgets render the same fields
            text_widget: dict[str, Any] = {}
            password_widget: dict[str, Any] = {}

            def lazy_gettext(text: str) -> str:
                return text
        else:
            text_widget = {"widget": BS3TextFieldWidget()}
            password_widget = {"widget": BS3PasswordFieldWidget()}

        widgets = {}
        for name, field in SPARK_K8S_CONNECTION["conn-fields"].items():
            label, description, schema = field["label"], field["description"], field["schema"]
            if schema.get("format") == "password":
                widgets[name] = PasswordField(
                    lazy_gettext(label), description=description, **password_widget
                )
            elif "boolean" in schema["type"]:
                widgets[name] = BooleanField(lazy_gettext(label), description=description)
            else:
                widgets[name] = StringField(
                    lazy_gettext(label), description=description, **text_widget
                )
        return widgets

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        behaviour = SPARK_K8S_CONNECTION["ui-field-behaviour"]
        return {
            "hidden_fields": behaviour["hidden-fields"],
            "relabeling": behaviour["relabeling"],
            "placeholders": behaviour["placeholders"],
        }


def _secret_extras(extra: Mapping[str, Any]) -> list[str]:
    extras = connection_extras(extra)
    names = (*SECRET_EXTRAS, *RENAMED_EXTRAS)  # former names still hold secrets
    return [str(extras[name]) for name in names if extras.get(name)]


def _secret_settings(settings: ClientSettings) -> list[str]:
    # A token or key that came from an inline kubeconfig is a secret of its own.
    return [value for value in (settings.token, settings.client_key_data) if value]
