"""The permission table holds every request the services make: a submission (with the secret
confs' Secret), adoption's ConfigMap read, --status, a poller's catch-up, the log tail and
--kill by glob go through a recorder to the real API server, and each recorded request's
RBAC access (kube/paths.access_of, what the API server checks) is a row of
services/cluster_access/permissions.py."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.paths import Access, access_of
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.cluster_access.permissions import SUBMITTER_PERMISSIONS
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods, FollowedPods
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.submission.features.driver_disruption_budget import (
    ENABLED_KEY as BUDGET_KEY,
)
from airflow_provider_sparkk8s.submission.secret_confs import ENABLED_KEY
from testenv.harness.recorder import RecordingServer
from tests.parity.apiserver import ApiServerUpstream

pytestmark = pytest.mark.controlplane


class Quiet:
    def info(self, msg: str, *args: Any) -> None: ...

    warning = info


def table_row(access: Access) -> Access:
    """The access without the namespace and name a request names (the table has neither)."""
    return Access(access.verb, access.resource, access.group, access.subresource)


def test_every_request_of_the_services_is_in_the_table(  # type: ignore[no-untyped-def]
    control_plane, namespace: str, tmp_path: Path
) -> None:
    upstream = ApiServerUpstream(
        control_plane.server,
        str(control_plane.ca_file),
        str(control_plane.admin_cert_file),
        str(control_plane.admin_key_file),
        namespace,
    )
    with (
        RecordingServer(upstream=upstream) as server,
        KubeClient(ClientSettings(server=server.url), RetryPolicy(attempts=1)) as client,
    ):
        argv = [
            "--master", f"k8s://{server.url}", "--deploy-mode", "cluster",
            "--conf", "spark.kubernetes.container.image=apache/spark:4.2.1",
            "--conf", f"spark.kubernetes.namespace={namespace}",
            "--conf", f"{ENABLED_KEY}=true",
            "--conf", f"{BUDGET_KEY}=true",
            "--conf", "spark.hadoop.fs.s3a.secret.key=planted-permissions-1",
            "--class", "org.example.Main", "local:///opt/app.jar",
        ]  # fmt: skip
        request = submission.SubmissionRequest(argv, environ={}, cwd=str(tmp_path))
        plan = submission.plan(
            submission.parse(request), spark_version="4.2.1", environ={"SPARK_USER": "u"}
        )
        sent = submission.submit(
            client, plan, lambda _path, conf: Storage.from_spark_conf(conf), Quiet()
        )
        pods = DriverPods(client)
        pod = pods.get(namespace, sent.driver_pod_name)
        assert pod is not None
        assert pods.driver_properties(pod) is not None  # adoption, the uploads' removal
        pods.catch_up(FollowedPods(namespace, f"spark-app-selector={sent.app_id}"))
        # KWOK's pods have no kubelet logs; the request is made all the same.
        with contextlib.suppress(KubeApiError):
            pods.log_tail(namespace, sent.driver_pod_name, "spark-kubernetes-driver", 5)
        assert pods.kill(f"{namespace}:{sent.driver_pod_name[:6]}*", namespace)
        recorded = server.recording.as_list()
    used = {
        table_row(access)
        for r in recorded
        if (access := access_of(r["method"], r["path"], {k: v[0] for k, v in r["query"].items()}))
    }
    table = {p.access for p in SUBMITTER_PERMISSIONS}
    assert used <= table, used - table
    # The run made most of what every submission needs (watch is the follower's stream).
    # What this run asked for: the roll-back's deletes (delete configmaps, services, ...) and
    # the create the API server checks inside a server-side apply are not requests of theirs.
    assert sorted(a.describe() for a in used) == [
        "create pods",
        "delete pods",
        "get configmaps",
        "get pods",
        "get pods/log",
        "list pods",
        "patch configmaps",
        "patch networkpolicies.networking.k8s.io",
        "patch poddisruptionbudgets.policy",
        "patch secrets",
        "patch services",
        "watch pods",
    ]
