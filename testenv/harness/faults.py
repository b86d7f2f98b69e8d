"""Faults and the fault table's figures, free of the product: a fault that starts and heals
(a Toxiproxy toxic, etcd stopped, API Priority and Fairness 429s), and one row of the table.
`testenv/trigger_fleet/fault_harness.py` runs triggers through them."""

from __future__ import annotations

import math
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from kubernetes.client import ApiClient

from testenv.harness.apf import throttle_user, unthrottle


@dataclass
class Fault:
    """Something that goes wrong for `seconds`: `inject` starts it, `heal` ends it."""

    name: str
    inject: Callable[[], None]
    heal: Callable[[], None]
    seconds: float


@dataclass
class FaultReport:
    fault: str
    apps: int
    completions: int = 0
    false_failures: int = 0
    duplicates: int = 0
    leaks: int = 0
    during: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return (
            self.completions == self.apps
            and self.false_failures == 0
            and self.duplicates == 0
            and self.leaks == 0
        )

    def row(self) -> str:
        cells = [
            self.fault,
            f"{self.completions} / {self.apps}",
            str(self.false_failures),
            str(self.duplicates),
            str(self.leaks),
            f"{percentile(self.during, 0.5):.2f} / {percentile(self.during, 0.99):.2f}",
            f"{percentile(self.after, 0.5):.2f} / {percentile(self.after, 0.99):.2f}",
        ]
        return "| " + " | ".join(cells) + " |"


TABLE_HEADER = (
    "| fault | completions | false failures | duplicates | leaks "
    "| delay during p50 / p99 (s) | delay after p50 / p99 (s) |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def toxic_fault(proxy: Any, name: str, type_: str, seconds: float, **attributes: Any) -> Fault:
    """A Toxiproxy toxic on both directions of `proxy` for `seconds`."""
    added: list[str] = []

    def inject() -> None:
        for stream in ("upstream", "downstream"):
            added.append(proxy.add_toxic(type_, stream=stream, **attributes))

    def heal() -> None:
        while added:
            proxy.remove_toxic(added.pop())

    return Fault(name, inject, heal, seconds)


def network_faults(proxy: Any, seconds: float) -> dict[str, Fault]:
    """The network faults of the fault table, by name (Toxiproxy attributes: ms, KB/s, us)."""
    return {
        "latency": toxic_fault(
            proxy, "latency 500 ms ± 250 ms", "latency", seconds, latency=500, jitter=250
        ),
        "reset": toxic_fault(
            proxy,
            "resets (each connection RST 1 s after its first byte)",
            "reset_peer",
            seconds,
            timeout=1000,
        ),
        "blackhole": toxic_fault(proxy, "black hole (no RST)", "timeout", seconds, timeout=0),
        "bandwidth": toxic_fault(proxy, "bandwidth 32 KB/s", "bandwidth", seconds, rate=32),
        "slicer": toxic_fault(
            proxy,
            "slicer (64 ± 32 B, 200 us)",
            "slicer",
            seconds,
            average_size=64,
            size_variation=32,
            delay=200,
        ),
    }


def etcd_outage(plane: Any, seconds: float) -> Fault:
    """etcd stopped for `seconds` and started again on the same data."""
    return Fault("etcd restart", plane.stop_etcd, plane.start_etcd, seconds)


def apf_throttling(
    api: ApiClient, plane: Any, namespace: str, user: str, seconds: float, noise: int = 4
) -> Fault:
    """API Priority and Fairness gives `user` one seat and rejects the rest with 429, while
    `noise` busy clients of the same user keep that seat taken (a tenant's other jobs)."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def busy() -> None:
        context = ssl.create_default_context(cafile=str(plane.ca_file))
        headers = {"Authorization": f"Bearer {plane.static_token}"}
        with httpx.Client(base_url=plane.server, verify=context, headers=headers) as client:
            while not stop.is_set():
                try:
                    client.get(f"/api/v1/namespaces/{namespace}/pods", params={"limit": "500"})
                except httpx.HTTPError:
                    time.sleep(0.05)

    def inject() -> None:
        throttle_user(api, user)
        for _ in range(noise):
            threads.append(threading.Thread(target=busy, daemon=True))
            threads[-1].start()

    def heal() -> None:
        stop.set()
        for thread in threads:
            thread.join()
        unthrottle(api)

    return Fault("API Priority and Fairness 429s", inject, heal, seconds)
