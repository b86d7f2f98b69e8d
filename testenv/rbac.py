"""The documented permissions, applied as documented: every object of `docs/rbac.yaml` in a
namespace of the caller's choosing, the submitter's RoleBinding pointing at the caller's
service account. The real-Spark tests and `make demo` run with exactly these Roles: Airflow
(or sparkk8s-submit) as the submitter, the driver as `spark`, never an admin identity."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Protocol

import yaml

RBAC_FILE = Path(__file__).resolve().parents[1] / "docs" / "rbac.yaml"
SUBMITTER_ROLE = "sparkk8s-submitter"
DRIVER_SERVICE_ACCOUNT = "spark"
_PLURALS = {"Role": "roles", "RoleBinding": "rolebindings", "ServiceAccount": "serviceaccounts"}


class Requests(Protocol):
    """What applying needs of a client: testenv's `AdminHttp`, or any client whose errors
    carry the HTTP `status` (so testenv imports no client of the product it tests)."""

    def request(self, method: str, path: str, *, json: Any = None) -> Any: ...


def documented_objects(
    namespace: str, submitter: str, submitter_namespace: str | None = None
) -> list[dict[str, Any]]:
    """docs/rbac.yaml as `kubectl -n <namespace> apply -f` sends it (the file names no
    namespace; kubectl sets the objects' own and nothing else), with the submitter's identity
    bound as the file says: the service account `submitter` of `submitter_namespace` (by
    default `namespace`) as the subject of the submitter's RoleBinding."""
    objects = []
    for document in yaml.safe_load_all(RBAC_FILE.read_text()):
        if not document:
            continue
        obj = copy.deepcopy(document)
        obj["metadata"]["namespace"] = namespace
        if obj["kind"] == "RoleBinding":
            # The submitter's Roles: sparkk8s-submitter, and sparkk8s-submitter-kueue.
            if obj["roleRef"]["name"].startswith(SUBMITTER_ROLE):
                obj["subjects"] = [
                    {
                        "kind": "ServiceAccount",
                        "name": submitter,
                        "namespace": submitter_namespace or namespace,
                    }
                ]
            else:
                for subject in obj["subjects"]:
                    subject["namespace"] = namespace
        objects.append(obj)
    return objects


def _path(obj: dict[str, Any]) -> str:
    group = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    return f"{group}/namespaces/{obj['metadata']['namespace']}/{_PLURALS[obj['kind']]}"


def apply_documented_rbac(
    admin: Requests, namespace: str, submitter: str, submitter_namespace: str | None = None
) -> None:
    """Creates the submitter's service account (in `submitter_namespace`, by default
    `namespace`) and every documented object in `namespace` (set-up only: this is the
    cluster administrator's step, so it runs as admin)."""
    home = submitter_namespace or namespace
    account = {"apiVersion": "v1", "kind": "ServiceAccount"}
    for obj in [
        {**account, "metadata": {"name": submitter, "namespace": home}},
        *documented_objects(namespace, submitter, home),
    ]:
        try:
            admin.request("POST", _path(obj), json=obj)
        except Exception as error:
            if getattr(error, "status", None) != 409:  # 409: it exists already
                raise
