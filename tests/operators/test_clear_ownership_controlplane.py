"""The guarded kill and the adoption mark against the real API server (issue 29): a kill
deletes a driver only while its own try owns it, with the pod's uid and resourceVersion as
the delete's preconditions, so an adoption that lands between the kill's read and its
delete makes the server refuse the delete. The operator's kill (`DriverPods`, sync) and the
trigger's (`async_pods.delete_if_owned`, through `on_kill`) both."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.ownership import ADOPTED_BY_TRY_ANNOTATION
from airflow_provider_sparkk8s.application.task.task_identity import TRY_NUMBER_LABEL
from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.kubeconfig import kubeconfig_settings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.pods.pod_requests import PodCall
from testenv.harness.kube import request
from testenv.harness.pods import (
    HOLD,
    create,
    get_pod,
    new_app_id,
    phase,
    spark_pod,
    wait_for_pod,
)
from testenv.harness.waiting import wait_for
from tests.support.kills import answered
from tests.triggers.spark_pods import connection_for, make_trigger

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]


@pytest.fixture
def pods(kubeconfig: Path) -> Iterator[DriverPods]:
    with DriverPods(KubeClient(kubeconfig_settings(str(kubeconfig))), owns_client=True) as p:
        yield p


def held_driver(api: Any, namespace: str, name: str, try_number: int) -> dict[str, Any]:
    """A live driver pod submitted by `try_number`, once KWOK holds it Running."""
    manifest = spark_pod(name, new_app_id(), annotations={HOLD: "true"})
    manifest["metadata"]["labels"][TRY_NUMBER_LABEL] = str(try_number)
    created = create(api, namespace, manifest)
    wait_for_pod(api, namespace, name, lambda p: phase(p) == "Running", 30, f"{name} Running")
    return created


def adopt(pods: DriverPods, namespace: str, name: str, try_number: int) -> Mapping[str, Any]:
    """Mark the pod adopted as the operator does: read, mark with that version, and read
    again when KWOK moved the pod in between (the mark is refused then)."""

    def mark() -> Mapping[str, Any] | None:
        pod = pods.get(namespace, name)
        assert pod is not None, f"{name} is gone"
        return pods.claim(pod, try_number)

    return wait_for(mark, 30, f"{name} adopted")


def alive(api: Any, namespace: str, name: str) -> bool:
    pod = get_pod(api, namespace, name)
    return pod is not None and not pod["metadata"].get("deletionTimestamp")


def test_a_kill_spares_the_driver_a_newer_try_adopted(pods, kube_admin, namespace):
    held_driver(kube_admin, namespace, "d-1-driver", try_number=1)
    claimed = adopt(pods, namespace, "d-1-driver", 2)
    assert claimed["metadata"]["annotations"][ADOPTED_BY_TRY_ANNOTATION] == "2"
    spared = pods.delete_if_owned(namespace, "d-1-driver", 1)
    assert spared is not None and "adopted by try 2" in spared.reason
    assert alive(kube_admin, namespace, "d-1-driver")
    # The adopting try's own kill deletes it.
    assert pods.delete_if_owned(namespace, "d-1-driver", 2) is None
    assert not alive(kube_admin, namespace, "d-1-driver")


def test_an_adoption_between_the_kills_read_and_delete_makes_the_server_refuse_it(
    pods, kube_admin, namespace
):
    """The interleaving no read-then-check can close: the kill of try 1 read the pod as its
    own; try 2's mark lands; the kill's delete, preconditioned on what it read, is refused
    (409) by the API server, and the kill reads again and spares the pod."""
    held_driver(kube_admin, namespace, "d-1-driver", try_number=1)

    class AdoptedAfterTheFirstRead(DriverPods):
        reads = 0

        def _send(self, call: PodCall) -> Any:  # every request of the pods service
            answer = super()._send(call)
            if call.method == "GET" and call.path.endswith("/pods/d-1-driver"):
                self.reads += 1
                if self.reads == 1:  # try 2 adopts now, after this read, before the delete
                    assert pods.claim(answer, 2) is not None
            return answer

    killer = AdoptedAfterTheFirstRead(pods.client)
    spared = killer.delete_if_owned(namespace, "d-1-driver", 1)
    assert killer.reads == 2, "the refused delete was not read again"
    assert spared is not None and "adopted by try 2" in spared.reason
    assert alive(kube_admin, namespace, "d-1-driver")


def test_the_server_refuses_a_delete_whose_resource_version_is_stale(pods, kube_admin, namespace):
    """The precondition the kill relies on, as the API server enforces it."""
    created = held_driver(kube_admin, namespace, "d-1-driver", try_number=1)
    stale = created["metadata"]["resourceVersion"]
    adopt(pods, namespace, "d-1-driver", 2)
    body = {"preconditions": {"uid": created["metadata"]["uid"], "resourceVersion": stale}}
    with pytest.raises(KubeApiError) as refused:
        pods.client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/d-1-driver", json=body)
    assert refused.value.status == 409
    assert alive(kube_admin, namespace, "d-1-driver")


def test_an_adoption_mark_on_a_pod_that_changed_since_it_was_listed_is_refused(
    pods, kube_admin, namespace
):
    """The other order: the old kill deleted the driver after the new try listed it; the
    new try's mark, preconditioned on the listed version, is refused, so it decides again
    (and sees the driver being deleted)."""
    listed = held_driver(kube_admin, namespace, "d-1-driver", try_number=1)
    path = f"/api/v1/namespaces/{namespace}/pods/d-1-driver"
    # What a delete does to a pod that has not stopped yet: it changes (here, a label).
    change = {"metadata": {"labels": {"changed": "yes"}}}
    request(kube_admin, "PATCH", path, change, content_type="application/merge-patch+json")
    assert pods.claim(listed, 2) is None
    annotations = get_pod(kube_admin, namespace, "d-1-driver")["metadata"].get("annotations")
    assert ADOPTED_BY_TRY_ANNOTATION not in (annotations or {})


def test_the_old_triggers_on_kill_spares_the_adopted_driver_and_deletes_its_own(
    monkeypatch, kubeconfig, pods, kube_admin, namespace
):
    conn_id = connection_for(monkeypatch, kubeconfig)
    held_driver(kube_admin, namespace, "a-1-driver", try_number=1)
    adopt(pods, namespace, "a-1-driver", 2)
    held_driver(kube_admin, namespace, "b-1-driver", try_number=1)
    app = new_app_id()
    asyncio.run(
        answered(make_trigger(conn_id, namespace, app, "a-1-driver", try_number=1)).on_kill()
    )
    asyncio.run(
        answered(make_trigger(conn_id, namespace, app, "b-1-driver", try_number=1)).on_kill()
    )
    assert alive(kube_admin, namespace, "a-1-driver")
    assert not alive(kube_admin, namespace, "b-1-driver")
