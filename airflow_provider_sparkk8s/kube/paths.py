"""REST paths of Kubernetes objects, and the reverse: which permission a request needs.

Pure functions. `resource_path` builds the URL path for (apiVersion, kind, namespace, name);
`object_path` and `resource_version` read an object dict's identity;
`access_of` reads a path back into the RBAC verb and resource that the API server checks,
so a 403 and `test_connection` can name exactly what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

# Plurals that the generic English rule would get wrong, or that we want to be explicit about.
_PLURALS = {
    "Pod": "pods",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "NetworkPolicy": "networkpolicies",
    "Namespace": "namespaces",
    "ServiceAccount": "serviceaccounts",
    "Endpoints": "endpoints",
    "Event": "events",
    "Ingress": "ingresses",
    "SelfSubjectAccessReview": "selfsubjectaccessreviews",
    "PodGroup": "podgroups",
}

# RFC 1123 subdomain / label characters: anything else would change the URL's meaning.
_SEGMENT = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def plural(kind: str) -> str:
    """The resource name of a kind: the known table, else the API machinery's English rule."""
    if kind in _PLURALS:
        return _PLURALS[kind]
    lower = kind.lower()
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def api_prefix(api_version: str) -> str:
    """`v1` -> `/api/v1` (the core group); `group/version` -> `/apis/group/version`."""
    if "/" in api_version:
        return f"/apis/{api_version}"
    return f"/api/{api_version}"


def resource_path(
    api_version: str,
    kind: str,
    namespace: str | None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The REST path of a collection (no name) or an object; namespace None = cluster scope."""
    path = api_prefix(api_version)
    if namespace is not None:
        path += f"/namespaces/{_segment('metadata.namespace', namespace)}"
    path += f"/{plural(kind)}"
    if name is not None:
        path += f"/{_segment('metadata.name', name)}"
    elif subresource is not None:
        raise ValueError("a subresource needs an object name")
    if subresource is not None:
        path += f"/{subresource}"
    return path


def object_path(obj: Mapping[str, Any], namespace: str | None = None) -> str:
    """The path of an object dict; `namespace` is used when its metadata has none."""
    metadata = obj.get("metadata") or {}
    return resource_path(
        obj["apiVersion"], obj["kind"], metadata.get("namespace") or namespace, metadata.get("name")
    )


# The field manager of every server-side apply the provider sends.
FIELD_MANAGER = "sparkk8s"


def apply_params(field_manager: str, force: bool = False) -> dict[str, str]:
    """Query parameters of a server-side apply (PATCH, application/apply-patch+yaml)."""
    params = {"fieldManager": field_manager}
    if force:
        params["force"] = "true"
    return params


def _segment(key: str, value: str) -> str:
    if not _SEGMENT.match(value) or len(value) > 253:
        raise SparkConfError(
            key, value, "a lowercase RFC 1123 name (a-z, 0-9, '-', '.'; at most 253 characters)"
        )
    return value


# --------------------------------------------------------------------------- permissions


@record
class Access:
    """One RBAC permission, as SelfSubjectAccessReview's resourceAttributes spell it."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def resource_label(self) -> str:
        """`pods`, `pods/log`, `networkpolicies.networking.k8s.io` (kubectl's spelling)."""
        label = self.resource if not self.group else f"{self.resource}.{self.group}"
        return f"{label}/{self.subresource}" if self.subresource else label

    def describe(self) -> str:
        where = f" in namespace {self.namespace!r}" if self.namespace else ""
        return f"{self.verb} {self.resource_label}{where}"

    def resource_attributes(self) -> dict[str, str]:
        attributes = {"verb": self.verb, "group": self.group, "resource": self.resource}
        for key in ("subresource", "namespace", "name"):
            if getattr(self, key):
                attributes[key] = getattr(self, key)
        return attributes


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "HEAD": "get"}


def access_of(method: str, path: str, params: Mapping[str, Any] | None = None) -> Access | None:
    """The permission the API server checks for a request, or None for non-resource paths."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    resource, name, subresource = rest[0], "", ""
    if len(rest) >= 2:
        name = rest[1]
    if len(rest) >= 3:
        subresource = rest[2]
    method = method.upper()
    watching = str((params or {}).get("watch", "")).lower() in ("1", "true")
    if method == "GET":
        verb = "watch" if watching else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return Access(verb, resource, group, subresource, namespace, name)


# kube-apiserver's RBAC refusal: `User "u" cannot create resource "configmaps" in API group ""
# in the namespace "ns"` (or `... at the cluster scope`); a subresource is `"pods/log"`.
# A pattern string, compiled by re on first use (only a refused request needs it).
_DENIED = (
    r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"/]+)(?:/(?P<sub>[^"]+))?"'
    r' in API group "(?P<group>[^"]*)"(?: in the namespace "(?P<namespace>[^"]*)")?'
)


def denied_access(message: str) -> Access | None:
    """The permission an RBAC refusal's message names, or None when the message is not one
    (a quota or an admission plugin answers 403 too). The message says what the API server
    checked: a server-side apply of a new object is checked as `create`, not `patch`."""
    found = re.search(_DENIED, message)
    if found is None:
        return None
    return Access(
        found["verb"],
        found["resource"],
        found["group"],
        found["sub"] or "",
        found["namespace"] or "",
    )
