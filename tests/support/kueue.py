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


@pytest.fixture(scope="module")
def real_kueue_manager(real_plane: ControlPlane) -> Iterator[KueueManager]:
    """Kueue beside the real node's plane (real Spark)."""
    with KueueManager(real_plane) as manager:
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
    """`namespace` opened to Kueue; call it with the ClusterQueue's quota."""
    yield from _queued_namespace(kueue_manager, namespace)


@pytest.fixture
def real_kueue_namespace(
    real_kueue_manager: KueueManager, real_namespace: str
) -> Iterator[Callable[[dict[str, str]], KueueNamespace]]:
    yield from _queued_namespace(real_kueue_manager, real_namespace)


def _queued_namespace(
    manager: KueueManager, namespace: str
) -> Iterator[Callable[[dict[str, str]], KueueNamespace]]:
    """Afterwards every pod and Workload in the namespace is deleted while the manager still
    runs (it holds finalizers on the pods it gated), then the ClusterQueue."""
    made: list[KueueNamespace] = []

    def make(quota: dict[str, str]) -> KueueNamespace:
        cluster_queue = f"cq-{secrets.token_hex(4)}"
        manager.enable_namespace(namespace)
        manager.create_queues(namespace, LOCAL_QUEUE, cluster_queue=cluster_queue, quota=quota)
        made.append(KueueNamespace(namespace, LOCAL_QUEUE, cluster_queue))
        return made[-1]

    yield make
    admin = manager.admin
    for created in made:
        admin.raw("DELETE", f"/api/v1/namespaces/{namespace}/pods")
        admin.raw("DELETE", f"{API}/namespaces/{namespace}/workloads")

        def empty() -> bool:
            pods = admin.json("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
            return not pods and not manager.workloads(namespace)

        wait_for(empty, 60, f"no pods and no Workloads left in {namespace}")
        with contextlib.suppress(AdminHttpError):
            manager.delete_cluster_queue(created.cluster_queue)
