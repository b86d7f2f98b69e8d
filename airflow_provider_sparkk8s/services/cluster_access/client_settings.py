"""spark-submit's Kubernetes client, from the Spark conf: Spark's SparkKubernetesClientFactory.

Start from what kubectl would use (the kubeconfig, at context `spark.kubernetes.context`
or the current one, else the in-cluster service account), then lay the conf over it: the
master URL, `spark.kubernetes.trust.certificates`, whichever of
`spark.kubernetes.authenticate.submission.{oauthToken,oauthTokenFile,caCertFile,
clientKeyFile,clientCertFile}` are set, the namespace and the two submission timeouts.

Reads files (the kubeconfig, and checks that the named ones are readable), so this sits in
the shell beside `submit.py`, not in the pure pipeline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import KubeConfigError, SparkConfError
from airflow_provider_sparkk8s.kube.kubeconfig import (
    SERVICE_ACCOUNT_ROOT,
    auto_settings,
    unloadable_kubeconfig,
)
from airflow_provider_sparkk8s.kube.settings import (
    ClientSettings,
    unreadable_reason,
    with_overrides,
)
from airflow_provider_sparkk8s.submission.command_line.master_url import normalize_master_url
from airflow_provider_sparkk8s.submission.conf_values import get_bool

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

SUBMISSION_PREFIX = "spark.kubernetes.authenticate.submission"
# ClientSettings field <- the conf key naming a file; each file must be readable up front.
_FILE_KEYS = {
    "token_file": f"{SUBMISSION_PREFIX}.oauthTokenFile",
    "ca_file": f"{SUBMISSION_PREFIX}.caCertFile",
    "client_key_file": f"{SUBMISSION_PREFIX}.clientKeyFile",
    "client_cert_file": f"{SUBMISSION_PREFIX}.clientCertFile",
}
_TIMEOUT_KEYS = {
    "request_timeout": "spark.kubernetes.submission.requestTimeout",
    "connect_timeout": "spark.kubernetes.submission.connectionTimeout",
}


def spark_submit_settings(
    conf: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
    in_cluster_root: str = SERVICE_ACCOUNT_ROOT,
) -> ClientSettings:
    """The client settings spark-submit would use for `conf` (see the module docstring)."""
    master = conf.get("spark.master")
    if not master:
        raise SparkConfError("spark.master", master, "k8s://[https://]<host>:<port>")
    server = normalize_master_url(master)
    context = conf.get("spark.kubernetes.context") or None
    source = "spark conf"
    try:
        base: ClientSettings | None = auto_settings(environ, context, in_cluster_root)
    except KubeConfigError as error:
        if context:
            raise KubeConfigError(f"spark.kubernetes.context={context!r}: {error}") from None
        base = None  # nothing to inherit; the conf alone must be enough
        missing = unloadable_kubeconfig(os.environ if environ is None else environ)
        if missing:  # said in every error the client raises: a TLS error has a reason then
            source += f" alone; KUBECONFIG names {', '.join(missing)}: no such file"
    return with_overrides(base, _conf_overrides(conf, server), source=source)


def _conf_overrides(conf: Mapping[str, str], server: str) -> dict[str, Any]:
    token = conf.get(f"{SUBMISSION_PREFIX}.oauthToken") or None
    if token and conf.get(_FILE_KEYS["token_file"]):
        raise SparkConfError(
            f"{SUBMISSION_PREFIX}.oauthToken",
            "<redacted>",
            f"not both {SUBMISSION_PREFIX}.oauthToken and .oauthTokenFile",
        )
    overrides: dict[str, Any] = {"server": server, "token": token}
    for field, key in _FILE_KEYS.items():
        overrides[field] = _readable_file(key, conf.get(key) or None)
    overrides["verify"] = not get_bool(conf, "spark.kubernetes.trust.certificates", False)
    overrides["namespace"] = conf.get("spark.kubernetes.namespace") or None
    for field, key in _TIMEOUT_KEYS.items():
        if conf.get(key):
            overrides[field] = _millis(key, conf[key])
    return overrides


def _readable_file(key: str, path: str | None) -> str | None:
    """Fail before any request when a file the conf names cannot be read."""
    reason = unreadable_reason(path) if path else None
    if reason is not None:
        raise SparkConfError(key, path, "a readable file", hint=f"{key}: {path} {reason}")
    return path


def _millis(key: str, value: str) -> float:
    try:
        millis = int(value.strip())
    except ValueError:
        raise SparkConfError(key, value, "a whole number of milliseconds") from None
    if millis <= 0:
        raise SparkConfError(key, value, "a positive number of milliseconds")
    return millis / 1000.0
