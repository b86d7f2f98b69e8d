"""Volcano's PodGroup CustomResourceDefinition (scheduling.volcano.sh/v1beta1), reduced to
what the API server needs to store PodGroups: names, scope, and an open schema."""

from __future__ import annotations

from typing import Any

CRD_NAME = "podgroups.scheduling.volcano.sh"
POD_GROUP_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": "scheduling.volcano.sh",
        "scope": "Namespaced",
        "names": {
            "plural": "podgroups",
            "singular": "podgroup",
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "shortNames": ["pg", "podgroup-v1beta1"],
        },
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
