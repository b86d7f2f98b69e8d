"""API Priority and Fairness objects that throttle one identity with 429s.

A PriorityLevelConfiguration with no seats of its own and none to borrow, whose limit
response is Reject, and a FlowSchema that sends every request of one user to it: while
both exist, kube-apiserver answers that user's requests with 429 Too Many Requests and a
Retry-After header, as a production cluster does to a client whose priority level is full.
Watches already open are not cut; new requests (lists, watch reconnects) are refused.
"""

from __future__ import annotations

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from testenv.harness.kube import request

FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"


def throttle_user(api: ApiClient, user: str, name: str = "sparkk8s-throttled") -> None:
    """From now on every request of `user` is refused with 429 (until `unthrottle`)."""
    request(
        api,
        "POST",
        f"{FLOWCONTROL}/prioritylevelconfigurations",
        {
            "metadata": {"name": name},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 0,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        },
    )
    request(
        api,
        "POST",
        f"{FLOWCONTROL}/flowschemas",
        {
            "metadata": {"name": name},
            "spec": {
                "priorityLevelConfiguration": {"name": name},
                "matchingPrecedence": 200,  # before every default schema but exempt/probes
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": user}}],
                        "resourceRules": [
                            {
                                "verbs": ["*"],
                                "apiGroups": ["*"],
                                "resources": ["*"],
                                "namespaces": ["*"],
                                "clusterScope": True,
                            }
                        ],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    }
                ],
            },
        },
    )


def unthrottle(api: ApiClient, name: str = "sparkk8s-throttled") -> None:
    for plural in ("flowschemas", "prioritylevelconfigurations"):
        try:
            request(api, "DELETE", f"{FLOWCONTROL}/{plural}/{name}")
        except ApiException as error:
            if error.status != 404:
                raise


POD_READER = [
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]}
]
SUBMITTER = [
    {
        "apiGroups": [""],
        "resources": ["pods", "configmaps", "services"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {
        "apiGroups": ["networking.k8s.io"],
        "resources": ["networkpolicies"],
        "verbs": ["get", "create", "patch", "delete"],
    },
]


def grant(api: ApiClient, namespace: str, user: str, rules: list[dict], name: str) -> None:
    """A Role `name` with `rules` in `namespace`, bound to `user` (a token identity, which
    unlike the admin certificate is not exempt from Priority and Fairness)."""
    request(
        api,
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
        {"metadata": {"name": name}, "rules": rules},
    )
    request(
        api,
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )
