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


def rule_verbs(role: str) -> list[tuple[str, str, str]]:
    """(group, resource, verb) of every verb docs/rbac.yaml's Role `role` grants, in order."""
    for document in yaml.safe_load_all(RBAC_FILE.read_text()):
        if document and document["kind"] == "Role" and document["metadata"]["name"] == role:
            return [
                (group, resource, verb)
                for rule in document["rules"]
                for group in rule["apiGroups"]
                for resource in rule["resources"]
                for verb in rule["verbs"]
            ]
    raise KeyError(role)


def without(
    objects: list[dict[str, Any]], role: str, group: str, resource: str, verb: str
) -> list[dict[str, Any]]:
    """The objects with the Role `role` granting everything it did but `verb` on
    `resource` of `group` (a rule naming several resources is split so the others keep it)."""
    changed = copy.deepcopy(objects)
    for obj in changed:
        if obj["kind"] != "Role" or obj["metadata"]["name"] != role:
            continue
        rules = []
        for rule in obj["rules"]:
            if group not in rule["apiGroups"] or resource not in rule["resources"]:
                rules.append(rule)
                continue
            others = [r for r in rule["resources"] if r != resource]
            if others:
                rules.append({**rule, "resources": others})
            verbs = [v for v in rule["verbs"] if v != verb]
            if verbs:
                rules.append({**rule, "resources": [resource], "verbs": verbs})
        obj["rules"] = rules
    return changed


def apply_objects(admin: Requests, objects: list[dict[str, Any]], submitter: str) -> None:
    """Creates the submitter's service account (in the first object's namespace) and
    `objects` (documented_objects, perhaps changed), as the cluster administrator would."""
    home = objects[0]["metadata"]["namespace"]
    _create_all(admin, [_account(submitter, home), *objects])


def _account(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace}}  # fmt: skip


def _create_all(admin: Requests, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        try:
            admin.request("POST", _path(obj), json=obj)
        except Exception as error:
            if getattr(error, "status", None) != 409:  # 409: it exists already
                raise


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
    _create_all(admin, [_account(submitter, home), *documented_objects(namespace, submitter, home)])
