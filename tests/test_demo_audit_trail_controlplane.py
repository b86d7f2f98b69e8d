"""`make demo`'s audit trail against a real kube-apiserver writing its audit log
(testenv/controlplane.py's `audit_log`): the user who created and deleted an object, and the
real garbage collector, named by its client, deleting what the deleted object owned."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from demo.audit_trail import AuditTrail, actor
from testenv.controlplane import ControlPlane

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def test_the_audit_log_names_the_user_and_the_garbage_collector(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    with ControlPlane(node_count=0, audit_log=log) as plane:
        client = KubeClient(kubeconfig_settings(str(plane.admin_kubeconfig)))
        owner = client.request("POST", CONFIGMAPS, json={"metadata": {"name": "owner"}})
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                     "uid": owner["metadata"]["uid"]}  # fmt: skip
        client.request(
            "POST", CONFIGMAPS, json={"metadata": {"name": "owned", "ownerReferences": [reference]}}
        )
        client.request("DELETE", f"{CONFIGMAPS}/owner")
        trail = AuditTrail(log)
        known = {"admin": "the administrator"}
        created = trail.created("configmaps", "default", "owned")
        deleted = trail.deleted("configmaps", "default", "owner", {})
        collected = trail.deleted("configmaps", "default", "owned", {}, wait=60)
    assert created is not None and actor(created, known) == "the administrator"
    assert deleted is not None and actor(deleted, known) == "the administrator"
    assert collected is not None and actor(collected, known) == "the garbage collector"
    assert trail.deleted("configmaps", "default", "never-made", {}, wait=0) is None
