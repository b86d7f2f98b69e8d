"""Which address each Service's DNS name leads to on the real node (pure): there is no
kube-proxy, so a Service's name leads to the first ready pod it selects (headless or not: a
ClusterIP would lead nowhere), and `kubernetes` to the address given for the API server.
testenv/realnode/cluster_dns.py writes these records for dnsmasq; Spark's executors reach
the driver through its Service name this way.
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
    """One address per Service: the first of its selected pods' IPs (sorted, so every
    rewrite agrees); `default/kubernetes` goes to `api_ip`. Services selecting no live pod
    are left out, as DNS has no record for them."""
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
