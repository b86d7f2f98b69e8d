"""Kueue's real manager beside the session's control plane (testenv/kueue.py), and a
namespace with a LocalQueue whose ClusterQueue has a given quota. Import the fixtures:

    from tests.support.kueue import kueue_manager, kueue_namespace  # noqa: F401
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from testenv.admin_client import AdminHttpError
from testenv.controlplane import ControlPlane
from testenv.harness.waiting import wait_for
from testenv.kueue import API, KueueManager

LOCAL_QUEUE = "team-queue"


@pytest.fixture(scope="module")
def kueue_manager(control_plane: ControlPlane) -> Iterator[KueueManager]:
    with KueueManager(control_plane) as manager:
        yield manager


@dataclass(frozen=True)
class KueueNamespace:
    name: str
    local_queue: str
    cluster_queue: str


@pytest.fixture
def kueue_namespace(
    kueue_manager: KueueManager, namespace: str
) -> Iterator[Callable[[dict[str, str]], KueueNamespace]]:
    """`namespace` opened to Kueue; call it with the ClusterQueue's quota. Afterwards every
    pod and Workload in it is deleted while the manager still runs (it holds finalizers on
    the pods it gated), then the ClusterQueue."""
    made: list[KueueNamespace] = []

    def make(quota: dict[str, str]) -> KueueNamespace:
        cluster_queue = f"cq-{secrets.token_hex(4)}"
        kueue_manager.enable_namespace(namespace)
        kueue_manager.create_queues(
            namespace, LOCAL_QUEUE, cluster_queue=cluster_queue, quota=quota
        )
        made.append(KueueNamespace(namespace, LOCAL_QUEUE, cluster_queue))
        return made[-1]

    yield make
    admin = kueue_manager.admin
    for created in made:
        admin.raw("DELETE", f"/api/v1/namespaces/{namespace}/pods")
        admin.raw("DELETE", f"{API}/namespaces/{namespace}/workloads")

        def empty() -> bool:
            pods = admin.json("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
            return not pods and not kueue_manager.workloads(namespace)

        wait_for(empty, 60, f"no pods and no Workloads left in {namespace}")
        with contextlib.suppress(AdminHttpError):
            kueue_manager.delete_cluster_queue(created.cluster_queue)
