"""Many deferred applications, one fault, and the figures the fault table reports.

Shared by the fault tests (`make test`, 100 applications) and the chaos benchmark
(`benchmarks/bench_faults.py`, 1,000). The shape of one run:

1. every application's driver is Running and held by KWOK, and one trigger per application
   runs in this event loop, all through one (possibly faulty) connection;
2. once every trigger has seen its driver running, the fault starts;
3. half of the drivers end while the fault lasts, at an even pace; the fault then heals and
   the other half end over `after_seconds`. A driver "ends" when its terminal status is
   written through the status subresource, as a kubelet does, with the admin's own
   connection (the fault sits only between our client and kube-apiserver); a write that the
   fault refuses (etcd down) is retried, and the end time is that of the write that took;
4. the figures: completions reported, false failures (a final event that is not the
   driver's real outcome), duplicate events, leaks (stores or store tasks left in the loop
   after every trigger ended), and the delay from a status write to its trigger's event, for
   the drivers that ended during the fault and for those that ended after it.

The faults and the report row are product-free: `testenv/harness/faults.py`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from airflow_provider_sparkk8s.services.following.store import SnapshotStore
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from testenv.harness.faults import Fault, FaultReport
from testenv.harness.kube import session
from testenv.harness.pods import terminated_status
from testenv.harness.waiting import until
from testenv.trigger_fleet.running_stores import running_stores
from testenv.trigger_fleet.tracked_apps import Fleet, TrackedApp, all_seen_running

DRIVER = "spark-kubernetes-driver"


def expected_outcome(app: TrackedApp) -> tuple[str, int]:
    return ("success", 0) if app.exit_code == 0 else ("failed", app.exit_code)


@dataclass
class _Watched:
    app: TrackedApp
    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    ended_at: float | None = None  # wall clock of the status write that took
    write_error: str | None = None  # why the last refused write was refused


def start_counting_triggers(
    apps: list[TrackedApp], namespace: str, conn_id: str, **settings: Any
) -> tuple[list[_Watched], list[asyncio.Task]]:
    """One trigger per app, each run to its end so a second event would be seen."""
    watched = [_Watched(app) for app in apps]

    async def follow(entry: _Watched) -> None:
        trigger = entry.app.trigger
        assert trigger is not None
        async for event in trigger.run():
            entry.events.append((time.time(), event.payload))
            entry.app.payload = entry.app.payload or event.payload

    tasks = []
    for entry in watched:
        entry.app.trigger = SparkK8sApplicationTrigger(
            application_id=entry.app.app_id,
            namespace=namespace,
            kubernetes_conn_id=conn_id,
            driver_pod_name=entry.app.driver,
            stream_logs=False,
            **settings,
        )
        tasks.append(asyncio.create_task(follow(entry), name=f"follow-{entry.app.driver}"))
    return watched, tasks


def _end_drivers(
    api: ApiClient, namespace: str, entries: list[_Watched], seconds: float, stop: float
) -> None:
    """Writes each driver's terminal status, evenly over `seconds`; retries refused writes
    until `stop` (monotonic)."""
    started = time.monotonic()
    with session(api, timeout=10) as client:
        for index, entry in enumerate(entries):
            delay = started + index * seconds / max(len(entries), 1) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            reason = "Completed" if entry.app.exit_code == 0 else "Error"
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            body = {"status": terminated_status((DRIVER,), entry.app.exit_code, reason, now)}
            path = f"/api/v1/namespaces/{namespace}/pods/{entry.app.driver}/status"
            while time.monotonic() < stop:
                try:
                    response = client.patch(
                        path,
                        json=body,
                        headers={"Content-Type": "application/strategic-merge-patch+json"},
                    )
                except Exception as error:  # noqa: BLE001 - the fault may refuse the write
                    entry.write_error = repr(error)
                    time.sleep(0.2)
                    continue
                if response.is_success:
                    entry.ended_at = time.time()
                    break
                entry.write_error = f"HTTP {response.status_code}: {response.text[:200]}"
                time.sleep(0.2)


def _store_leaks(running: list[SnapshotStore]) -> int:
    tasks = [
        t for t in asyncio.all_tasks() if not t.done() and t.get_name().startswith("sparkk8s-")
    ]
    return len(running) + len(tasks)


async def run_under_fault(
    api: ApiClient, fleet: Fleet, conn_id: str, fault: Fault, **settings: Any
) -> FaultReport:
    """See the module docstring. `fleet`'s drivers must be Running and held."""
    with running_stores() as running:
        return await _run_under_fault(api, fleet, conn_id, fault, running, **settings)


async def _run_under_fault(
    api: ApiClient,
    fleet: Fleet,
    conn_id: str,
    fault: Fault,
    running: list[SnapshotStore],
    *,
    after_seconds: float = 5.0,
    deadline: float = 120.0,
    **trigger_settings: Any,
) -> FaultReport:
    watched, tasks = start_counting_triggers(
        fleet.apps, fleet.namespace, conn_id, **trigger_settings
    )
    fleet.tasks.extend(tasks)
    report = FaultReport(fault.name, len(fleet.apps))
    try:
        await until(lambda: all_seen_running(fleet), deadline, "every trigger to see its driver")
        half = len(watched) // 2
        during, after = watched[:half], watched[half:]
        stop = time.monotonic() + deadline
        await asyncio.to_thread(fault.inject)
        # The writes run beside the fault's clock: a fault that refuses them (etcd down)
        # must still heal on time, and its refused writes take once it has.
        writing = asyncio.create_task(
            asyncio.to_thread(_end_drivers, api, fleet.namespace, during, fault.seconds * 0.8, stop)
        )
        try:
            await asyncio.sleep(fault.seconds)
        finally:
            await asyncio.to_thread(fault.heal)
        healed = time.time()
        await writing
        await asyncio.to_thread(_end_drivers, api, fleet.namespace, after, after_seconds, stop)
        try:
            await until(lambda: all(e.events for e in watched), deadline, "every final event")
        except AssertionError as error:
            report.problems.append(str(error))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(0)  # let the last store stop
    report.leaks = _store_leaks(running)
    for entry in watched:
        if entry.ended_at is None:
            report.problems.append(
                f"{entry.app.driver}: its terminal status was never written ({entry.write_error})"
            )
        if not entry.events:
            continue
        report.completions += 1
        report.duplicates += len(entry.events) - 1
        fired, payload = entry.events[0]
        if (payload.get("status"), payload.get("exit_code")) != expected_outcome(entry.app):
            report.false_failures += 1
            report.problems.append(
                f"{entry.app.driver}: {payload.get('status')} {payload.get('reason')} "
                f"{payload.get('message')}"
            )
        if entry.ended_at is None:
            continue
        delay = fired - entry.ended_at
        (report.during if entry.ended_at < healed else report.after).append(delay)
    return report
