"""The per-pod /etc/hosts that stands in for cluster DNS (pure).

There is no DNS server here: each pod's hosts file names every Service by its DNS names
and maps them to the pod IPs behind it (headless or not: there is no kube-proxy, so a
ClusterIP would lead nowhere), and `kubernetes.default.svc` to the agent's forward to the
API server. Spark's executors reach the driver through its Service name this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CLUSTER_DOMAIN = "cluster.local"
API_SERVICE = ("default", "kubernetes")


@dataclass(frozen=True)
class PodAddress:
    namespace: str
    labels: Mapping[str, str]
    ip: str
    ready: bool = True  # a pod that ended keeps its IP in the status; it leaves the Service


@dataclass(frozen=True)
class ServiceAddress:
    namespace: str
    name: str
    ip: str


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def service_addresses(
    services: Iterable[Mapping[str, Any]], pods: Iterable[PodAddress], api_ip: str
) -> list[ServiceAddress]:
    """One address per Service: the first of its selected pods' IPs (sorted, so every pod's
    file agrees); `default/kubernetes` goes to the API forward. Services selecting no live
    pod are left out, as DNS has no record for them."""
    live = [pod for pod in pods if pod.ready]
    addresses = []
    for service in services:
        metadata = service.get("metadata") or {}
        namespace, name = metadata.get("namespace") or "default", metadata.get("name") or ""
        if (namespace, name) == API_SERVICE:
            addresses.append(ServiceAddress(namespace, name, api_ip))
            continue
        selector = (service.get("spec") or {}).get("selector") or {}
        ips = sorted(
            p.ip for p in live if p.namespace == namespace and _selects(selector, p.labels)
        )
        if ips:
            addresses.append(ServiceAddress(namespace, name, ips[0]))
    if not any((a.namespace, a.name) == API_SERVICE for a in addresses):
        addresses.append(ServiceAddress(*API_SERVICE, api_ip))
    return sorted(addresses, key=lambda a: (a.namespace, a.name))


def hosts_file(
    hostname: str, pod_ip: str, namespace: str, services: Iterable[ServiceAddress]
) -> str:
    """The file's text: loopback names, the pod's own name, then each Service by its full,
    `.svc`, namespace-qualified and (in the pod's namespace) short names."""
    lines = [
        "# Kubernetes-managed hosts file (sparkk8s process runtime).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{pod_ip}\t{hostname}",
    ]
    for service in services:
        base = f"{service.name}.{service.namespace}"
        names = [f"{base}.svc.{CLUSTER_DOMAIN}", f"{base}.svc", base]
        if service.namespace == namespace:
            names.append(service.name)
        lines.append(f"{service.ip}\t{' '.join(names)}")
    return "\n".join(lines) + "\n"
