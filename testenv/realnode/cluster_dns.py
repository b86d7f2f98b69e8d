"""Cluster DNS for the real node: dnsmasq answers `cluster.local` on the node IP from a
hosts file, and this watcher keeps that file to the Services and the pods behind them
(testenv/realnode/services.py: there is no kube-proxy, so a Service's name leads to its
first ready pod, and `kubernetes` to its ClusterIP, which the namespace's DNAT rule leads to
the API server).

After each change it rewrites the file and sends dnsmasq SIGHUP, which re-reads it whole, so
a Service or pod gone leaves no stale record.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from testenv.admin_client import AdminHttp
from testenv.realnode.config import API_SERVICE_IP, NODE_IP, dns_records
from testenv.realnode.informer import Informer
from testenv.realnode.services import PodAddress, service_addresses

RECORDS_FILE = "services"


def dnsmasq_argv(binary: Path, hosts_dir: Path) -> list[str]:
    return [
        str(binary),
        "--keep-in-foreground",
        "--conf-file=/dev/null",
        "--pid-file=",
        "--user=root",
        f"--listen-address={NODE_IP}",
        "--bind-interfaces",
        # Answers for the cluster's names only: no upstream, nothing asked outside.
        "--no-resolv",
        "--no-hosts",
        "--local=/cluster.local/",
        f"--hostsdir={hosts_dir}",
        "--log-facility=-",
    ]


def _pod_address(pod: dict[str, Any]) -> PodAddress | None:
    status = pod.get("status") or {}
    ip = status.get("podIP")
    if not ip:
        return None
    metadata = pod.get("metadata") or {}
    return PodAddress(
        namespace=metadata.get("namespace", "default"),
        labels=metadata.get("labels") or {},
        ip=ip,
        ready=status.get("phase") == "Running",
    )


class ServiceRecords:
    def __init__(self, client: AdminHttp, hosts_dir: Path, dnsmasq_pid: int) -> None:
        self.client = client
        self.hosts_dir = hosts_dir
        self.dnsmasq_pid = dnsmasq_pid
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._written: str | None = None
        self._services = Informer(client, "/api/v1/services", self._changed, stop=self._stop)
        self._pods = Informer(client, "/api/v1/pods", self._changed, stop=self._stop)

    def start(self) -> ServiceRecords:
        self._services.start()
        self._pods.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.client.close()  # ends the watches now, not at their timeout

    def _changed(self, kind: str, obj: dict[str, Any]) -> None:
        # Any change of a Service or a pod may move a record: recompute them all (a test
        # cluster holds a few dozen objects).
        pods = [a for pod in self._pods.snapshot() if (a := _pod_address(pod))]
        text = dns_records(service_addresses(self._services.snapshot(), pods, API_SERVICE_IP))
        with self._lock:
            if text == self._written:
                return
            partial = self.hosts_dir.parent / f".{RECORDS_FILE}.partial"
            partial.write_text(text)
            # Written beside the folder, then renamed in: dnsmasq never reads half a file.
            partial.rename(self.hosts_dir / RECORDS_FILE)
            os.kill(self.dnsmasq_pid, signal.SIGHUP)
            self._written = text

    def records(self) -> str:
        return self._written or ""
