"""A failed answer or a failed connection as the package's error, with a useful message.

A Status body gives the reason and message; a 403 names the missing permission as RBAC's
refusal names it (and, in a namespace, that the namespace may not exist), and none for a
quota's or an admission plugin's 403; a 401 names the credentials used; a TLS failure says
whether the certificate or the handshake failed.
"""

from __future__ import annotations

import contextlib
import json as jsonlib

from airflow_provider_sparkk8s.errors import (
    KubeApiError,
    KubeConnectionError,
    KubeTLSVerificationError,
)
from airflow_provider_sparkk8s.kube.paths import Access, access_of, denied_access
from airflow_provider_sparkk8s.kube.request import KubeRequest
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.transport import TransportFailure, tls_failure

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any


def api_error(
    request: KubeRequest,
    status: int,
    body: bytes,
    http_reason: str,
    settings: ClientSettings,
) -> KubeApiError:
    """KubeApiError from a failed response, with the Status body's reason and message."""
    parsed: Any = None
    with contextlib.suppress(ValueError):
        parsed = jsonlib.loads(body) if body else None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        reason = parsed.get("reason") or http_reason
        message = parsed.get("message") or http_reason
    else:
        reason = http_reason
        message = body.decode(errors="replace").strip()[:300] or http_reason
        parsed = None
    missing_permission = ""
    if status == 403:
        access = refused_access(request, message, from_status=parsed is not None)
        if access is not None:
            missing_permission = access.describe()
            # RBAC grants nothing in a namespace that does not exist, so a missing namespace
            # answers 403, not 404, to an identity without cluster-wide rights.
            missing = (
                f" (or the namespace {access.namespace!r} does not exist)"
                if access.namespace
                else ""
            )
            message = f"missing permission to {missing_permission}{missing}: {message}"
    elif status == 401:
        message = (
            f"{message}: the API server rejected the credentials "
            f"({settings.auth_description}){settings.origin()}"
        )
    return KubeApiError(
        status,
        reason,
        message,
        method=request.method,
        path=request.path,
        body=parsed,
        missing_permission=missing_permission,
    )


def refused_access(request: KubeRequest, message: str, *, from_status: bool) -> Access | None:
    """The permission a 403 says is missing: the one RBAC's refusal names, else the one the
    request needs; None for a refusal that is not RBAC's (a ResourceQuota's `exceeded quota`,
    Pod Security admission: a Status whose message says `is forbidden:` but names no verb)."""
    denied = denied_access(message)
    if denied is not None:
        return denied
    if from_status and "is forbidden:" in message:
        return None
    return access_of(request.method, request.path, request.params)


def connection_error(
    request: KubeRequest, failure: TransportFailure, settings: ClientSettings
) -> KubeConnectionError:
    tls = tls_failure(failure)
    target = f"{settings.server} ({request.method} {request.path})"
    if tls is not None:
        import ssl  # loaded already: a TLS error came from it

        if isinstance(tls, ssl.SSLCertVerificationError):
            hint = (
                "check the CA certificate"
                + (f" {settings.ca_file}" if settings.ca_file else "")
                + " and the TLS server name"
            )
            detail = tls.verify_message or str(tls.reason)
            return KubeTLSVerificationError(
                f"TLS verification of {target} failed: {detail}; {hint}{settings.origin()}"
            )
        return KubeConnectionError(
            f"TLS handshake with {target} failed: {tls.reason or type(tls).__name__}"
            f"{settings.origin()}"
        )
    return KubeConnectionError(
        f"cannot reach the API server {target}: {failure.kind}: {failure.cause}{settings.origin()}"
    )
