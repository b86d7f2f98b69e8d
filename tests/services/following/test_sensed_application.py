"""The sensor's application found as the DAG names it, and what its timeout met, through a
fake sync client (the sensor's and the worker-free trigger's one home for both)."""

from __future__ import annotations

from typing import Any

from airflow_provider_sparkk8s.services.following.sensed_application import (
    Named,
    look_up,
    timed_out,
)
from testenv.harness.pod_builders import APP, pod, running
from tests.sensors.test_application_sensor import FakeClient, FakeHook


class Log:
    def info(self, *args: Any) -> None: ...

    warning = error = info


def test_each_way_of_naming_says_what_it_waits_for() -> None:
    assert Named(application_id=APP).what() == f"application {APP}"
    assert Named(driver_pod_name="d").what() == "driver pod d"
    assert Named(label_selector="job=x").what() == "label selector 'job=x'"


def test_the_lookup_finds_the_driver_and_closes_the_client() -> None:
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    target, namespace = look_up(FakeHook(client), Named(driver_pod_name="d"))
    assert (target.application_id, target.driver_pod, namespace) == (APP, "d", "ns")
    assert target.found == APP and client.closed
    missing, _ = look_up(FakeHook(FakeClient([])), Named(application_id=APP))
    assert missing.found is None


def test_a_timeout_names_the_driver_and_deletes_it_only_when_asked() -> None:
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    removed: list[Any] = []

    def remove(dirs: Any, conf: Any) -> list[str]:
        removed.append(dirs)
        return []

    kept = timed_out(FakeHook(client), Named(application_id=APP), delete=False, remove_uploads=remove, log=Log())  # fmt: skip
    assert kept.startswith(f"driver pod ns:d of application {APP} ran for ")
    assert kept.endswith("left running (delete_on_timeout=False)")
    assert not [r for r in client.requests if r[0] == "DELETE"] and client.closed
    deleted = timed_out(FakeHook(client), Named(application_id=APP), delete=True, remove_uploads=remove, log=Log())  # fmt: skip
    assert deleted.endswith(" and was deleted")
    assert ("DELETE", "/api/v1/namespaces/ns/pods/d") in [r[:2] for r in client.requests]
    none = timed_out(FakeHook(FakeClient([])), Named(driver_pod_name="x"), delete=True, remove_uploads=remove, log=Log())  # fmt: skip
    assert none == "no Spark driver found for driver pod x"
