"""Control-plane faults with 100 applications in flight: etcd stopped and started again, and
API Priority and Fairness refusing our identity's requests with 429s. Every completion is
reported once, with the driver's real outcome."""

from __future__ import annotations

import pytest

from testenv.controlplane import STATIC_TOKEN_USER
from testenv.harness.apf import POD_READER, grant, unthrottle
from testenv.harness.faults import apf_throttling, etcd_outage
from testenv.harness.waiting import wait_for
from testenv.trigger_fleet.fault_harness import run_under_fault
from testenv.trigger_fleet.tracked_apps import Fleet, all_running, create_held_apps
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

APPS = 100


@pytest.fixture
def fleet(namespace, kube_admin):
    apps = create_held_apps(kube_admin, namespace, APPS)
    wait_for(lambda: all_running(kube_admin, namespace, APPS), 120, f"{APPS} drivers Running")
    return Fleet(namespace, apps)


async def test_etcd_restart_loses_no_completion(
    fleet, kube_admin, control_plane, kubeconfig, monkeypatch
):
    conn_id = connection_for(monkeypatch, kubeconfig)
    report = await run_under_fault(
        kube_admin, fleet, conn_id, etcd_outage(control_plane, 6.0), resync_interval=30.0
    )
    print(report.row())
    assert report.clean, (report.row(), report.problems[:5])


async def test_429s_from_priority_and_fairness_lose_no_completion(
    fleet, kube_admin, control_plane, namespace, tmp_path, monkeypatch
):
    grant(kube_admin, namespace, STATIC_TOKEN_USER, POD_READER, "spark-pods-reader")
    kubeconfig = control_plane.write_kubeconfig(
        tmp_path / "token.kubeconfig", namespace, token=control_plane.static_token
    )
    conn_id = connection_for(monkeypatch, kubeconfig)
    fault = apf_throttling(kube_admin, control_plane, namespace, STATIC_TOKEN_USER, 8.0)
    rejected_before = rejected_429s(control_plane)
    try:
        # Short resyncs: the lists, not only the long-lived watch, meet the throttling.
        report = await run_under_fault(kube_admin, fleet, conn_id, fault, resync_interval=2.0)
    finally:
        unthrottle(kube_admin)
    print(report.row())
    assert rejected_429s(control_plane) > rejected_before  # the fault really refused requests
    assert report.clean, (report.row(), report.problems[:5])


def rejected_429s(plane) -> int:
    total = 0
    for line in plane.metrics_text().splitlines():
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{") and (
            'flow_schema="sparkk8s-throttled"' in line
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total
