"""Network faults between the shared store and kube-apiserver, with 50 applications in
flight: a real Toxiproxy in between (latency with jitter, resets, a black hole, a bandwidth
limit, a slicer). Every completion is reported once, with the driver's real outcome."""

from __future__ import annotations

import pytest

from testenv.harness.faults import network_faults
from testenv.harness.waiting import wait_for
from testenv.trigger_fleet.fault_harness import run_under_fault
from testenv.trigger_fleet.tracked_apps import Fleet, all_running, create_held_apps
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

APPS = 50
FAULT_SECONDS = 6.0


@pytest.fixture
def fleet(namespace, kube_admin):
    apps = create_held_apps(kube_admin, namespace, APPS)
    wait_for(lambda: all_running(kube_admin, namespace, APPS), 120, f"{APPS} drivers Running")
    return Fleet(namespace, apps)


@pytest.mark.parametrize("fault_name", ["latency", "reset", "blackhole", "bandwidth", "slicer"])
async def test_every_completion_survives_the_fault(
    fault_name, fleet, kube_admin, api_proxy, proxied_kubeconfig, monkeypatch
):
    conn_id = connection_for(monkeypatch, proxied_kubeconfig)
    fault = network_faults(api_proxy, FAULT_SECONDS)[fault_name]
    report = await run_under_fault(kube_admin, fleet, conn_id, fault, resync_interval=30.0)
    print(report.row())
    assert report.clean, (report.row(), report.problems[:5])
    assert len(report.during) + len(report.after) == APPS, report.problems[:5]
