"""The Node and its Lease, as the agent registers and renews them (pure)."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any

KUBELET_VERSION = "v1.35.4"
RUNTIME_VERSION = "sparkk8s-process://1"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40  # the node-monitor grace period is 50 s; the agent renews every 10 s
NODE_LABEL = "sparkk8s.io/process-runtime"


def node_object(
    name: str, node_ip: str, kubelet_port: int, capacity: Mapping[str, str]
) -> dict[str, Any]:
    """A Node as a kubelet registers it; the status is written separately (`node_status`)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                NODE_LABEL: "true",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": node_status(node_ip, kubelet_port, capacity, name, "1970-01-01T00:00:00Z"),
    }


def node_status(
    node_ip: str, kubelet_port: int, capacity: Mapping[str, str], hostname: str, now: str
) -> dict[str, Any]:
    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return {
        "capacity": dict(capacity),
        "allocatable": dict(capacity),
        "addresses": [
            {"type": "InternalIP", "address": node_ip},
            {"type": "Hostname", "address": hostname},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        "nodeInfo": {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": platform.release(),
            "osImage": "sparkk8s process runtime",
            "containerRuntimeVersion": RUNTIME_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "ok"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "ok"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "ok"),
            condition("Ready", "True", "KubeletReady", "the process runtime is running"),
        ],
    }


def lease_object(node_name: str, node_uid: str, now_micro: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node_name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}
            ],
        },
        "spec": {
            "holderIdentity": node_name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": now_micro,
        },
    }
