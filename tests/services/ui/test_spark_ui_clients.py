"""KubeClients (services/ui/spark_ui_proxy.py): one client per connection, kept for a while,
a replaced one closed only after its grace, on plain stand-ins; CheckedDrivers' memory."""

from __future__ import annotations

from typing import Any

from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget
from airflow_provider_sparkk8s.services.ui.spark_ui_proxy import CheckedDrivers, KubeClients


class FakeClient:
    def __init__(self, settings: Any):
        self.settings = settings
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_a_client_is_kept_per_connection_then_replaced_and_closed_after_its_grace():
    now = [0.0]
    loads: list[str] = []

    def load(conn_id: str) -> Any:
        loads.append(conn_id)
        return f"settings of {conn_id} #{len(loads)}"

    clients = KubeClients(
        load,
        ttl=60,
        grace=600,
        clock=lambda: now[0],
        new_client=FakeClient,  # type: ignore[arg-type]
    )
    first = await clients.get("a")
    assert await clients.get("a") is first and loads == ["a"]
    other = await clients.get("b")
    assert other is not first and loads == ["a", "b"]

    now[0] = 61  # past the TTL: the connection is read again, the old client kept open
    second = await clients.get("a")
    assert second is not first and loads == ["a", "b", "a"]
    assert not first.closed  # type: ignore[attr-defined]

    now[0] = 61 + 600  # past its grace: closed on the next request
    await clients.get("b")
    assert first.closed  # type: ignore[attr-defined]
    await clients.aclose()
    assert second.closed and other.closed  # type: ignore[attr-defined]


def test_a_checked_driver_is_remembered_for_its_ttl_per_task_instance_and_hint():
    now = [0.0]
    checked = CheckedDrivers(ttl=10, clock=lambda: now[0])
    ref, hint = TaskInstanceRef("etl", "pi", "r"), SparkUiTarget("c", "jobs", "pi-driver")
    target = SparkUiTarget("c", "jobs", "pi-driver", 4041)
    assert checked.get(hint, ref) is None
    checked.put(hint, ref, target)
    assert checked.get(hint, ref) == target
    assert checked.get(hint, TaskInstanceRef("etl", "pi", "r2")) is None
    assert checked.get(SparkUiTarget("c", "jobs", "other-driver"), ref) is None
    now[0] = 10.0  # past its TTL: checked again
    assert checked.get(hint, ref) is None
