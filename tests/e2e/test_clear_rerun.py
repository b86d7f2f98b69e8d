"""Clearing a task while its driver runs, through the real scheduler and triggerer (issue 29).

A clear means "run this task again": the cleared try submits a fresh application once the
old try's driver is gone, and the two never run side by side. The old try's kill (the
trigger's `on_kill` when deferred, the operator's when it waits in the worker) and the new
try's start race; each test pins the order:
- deferred, new try first (the order the user saw), cleared with the REST API's
  clearTaskInstances (what the UI's Clear sends): the old trigger's kill is held until the
  new try has deferred (tests/e2e/clear_triggers.py);
- deferred, kill first: the new try is held back by its pool (no slot) until the old
  trigger's kill has run, and the old pod is held terminating by a finalizer of the test, so
  the new try finds the old driver being deleted, waits, and submits the next number once it
  is gone (the kill's lines come from the marker file, as the trigger's log may be closed);
- deferred, cleared without resetting the DAG run (Airflow's clear number unchanged), new
  try first as above: the new try adopts the live driver, and the old trigger's kill leaves
  the adopted driver alone;
- waited in the worker (deferrable=False): the old try's process is killed (its on_kill
  runs) before Airflow starts the new try.
The DAGs are tests/e2e/e2e_dags/e2e_clear.py; real Spark on the real node. The adoption
mark refused because the kill landed first is checked against the real API server
(tests/operators/test_clear_ownership_controlplane.py).

Each deferred test runs beside two placeholder deferred tasks: Airflow 3.3 on SQLite gives
a new trigger the id of the highest one just deleted (SQLite reuses the largest rowid;
PostgreSQL's sequence never does). The first placeholder takes the id of the previous test's
last trigger, which fires just before the next test starts (such a trigger was seen to wait
minutes before the triggerer ran it). The second defers once try 1 has, above try 1's
trigger: without it, the clear deleted try 1's trigger, try 2's got its id, and the
triggerer, still running that id, kept try 1's trigger object in place of try 2's: it was
never cancelled, so its kill never ran (seen in CI and alone, the adoption test).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes.client.exceptions import ApiException

from testenv.airflow_stack import AirflowStack, StackError, wait_for
from testenv.harness import kube
from testenv.real_spark import PodRecorder
from tests.e2e.clear_triggers import KILL_FIRST_POOL, marker
from tests.e2e.e2e_stack import E2E_NAMESPACE, E2E_TIMINGS
from tests.e2e.test_airflow_end_to_end import messages, task_instance, task_log, xcom
from tests.e2e.test_failure_outcomes import assert_nothing_left

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]

TASK_ID = "spark_cleared"
PODS = f"/api/v1/namespaces/{E2E_NAMESPACE}/pods"
HOLD_FINALIZER = "e2e.sparkk8s.io/hold-deletion"
DAG_LABEL = "sparkk8s.io/dag-id"


def drivers_of(recorder: PodRecorder, dag_id: str) -> list[str]:
    """The DAG's driver pods, in the order they were created."""
    names: list[str] = []
    for event in recorder.events:
        labels = recorder.pods[event.name]["metadata"].get("labels") or {}
        if event.role == "driver" and labels.get(DAG_LABEL) == dag_id and event.name not in names:
            names.append(event.name)
    return names


def event_index(recorder: PodRecorder, name: str, kind: str) -> int:
    return next(i for i, e in enumerate(recorder.events) if e.name == name and e.kind == kind)


def start_until_driver_runs(
    airflow: AirflowStack, client: httpx.Client, recorder: PodRecorder, dag_id: str, state: str
) -> tuple[str, str]:
    """Trigger `dag_id` and wait until its task is `state` (deferred: its trigger follows
    the driver) with its executor computing."""
    airflow.wait_dag(client, dag_id)
    run_id = airflow.trigger(client, dag_id)

    def driver_computing() -> str | None:
        drivers = drivers_of(recorder, dag_id)
        if not drivers or task_instance(client, dag_id, run_id, TASK_ID)["state"] != state:
            return None
        if state == "deferred" and not any(
            line.startswith("Spark application ")  # the trigger's state lines
            for line in messages(task_log(client, dag_id, run_id, TASK_ID))
        ):
            return None  # the trigger has not looked yet: there would be no kill to race
        app = recorder.pods[drivers[0]]["metadata"]["labels"]["spark-app-selector"]
        running = [
            name
            for name in recorder.reached("executor", "Running")
            if recorder.pods[name]["metadata"]["labels"].get("spark-app-selector") == app
        ]
        return drivers[0] if running else None

    first = wait_for(driver_computing, timeout=300, what=f"{dag_id} {state}, executor running")
    return run_id, first


@contextmanager
def trigger_id_placeholder(airflow: AirflowStack, client: httpx.Client) -> Iterator[None]:
    """A deferred task of e2e_clear_placeholder for the duration (see the module's note)."""
    dag_id, task_id = "e2e_clear_placeholder", "hold"
    airflow.wait_dag(client, dag_id)
    run_id = airflow.trigger(client, dag_id)
    wait_for(
        lambda: task_instance(client, dag_id, run_id, task_id)["state"] == "deferred" or None,
        timeout=120,
        what="the placeholder to defer",
    )
    try:
        yield
    finally:
        client.patch(
            f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}",
            json={"new_state": "success"},
        )


def wait_old_kill_done(
    airflow: AirflowStack, dag_id: str, try1: Callable[[], list[str]] | None = None
) -> list[str] | None:
    """Try 1's kill ran to its end (tests/e2e/clear_triggers.py writes the file): the lines
    it logged. With `try1` (reads try 1's log): or the old trigger ended on its own first,
    because the new try had deleted its driver before the triggerer cancelled it (then
    there is no kill to wait for, and None). The log is read again on each look: the
    triggerer's lines reach it late on a loaded machine."""
    done = Path(f"{marker(dag_id, 2, airflow.home)}.killed")
    seen: list[str] = []

    def ended() -> bool | None:
        if done.exists():
            return True
        seen[:] = try1() if try1 else []
        fired = any("Trigger fired event" in line for line in seen)
        return (fired and not any("invoking on_kill" in line for line in seen)) or None

    try:
        wait_for(ended, timeout=120, what=f"{done} (the old kill's end)")
    except StackError as error:
        markers = sorted(p.name for p in done.parent.iterdir()) if done.parent.exists() else []
        triggerer = [
            line
            for line in airflow.tail("triggerer", 2000).splitlines()
            if dag_id in line or "on_kill" in line or "cancel" in line.lower()
        ]
        raise AssertionError(
            "\n".join(
                [
                    str(error),
                    f"markers: {markers}",
                    "--- try 1 ---",
                    *seen,
                    "--- triggerer ---",
                    *triggerer[-60:],
                ]
            )
        ) from error
    return done.read_text().splitlines() if done.exists() else None


def hold_deletion(admin: Any, pod: str, *, hold: bool) -> None:
    """Add (or remove) the test's finalizer on `pod`: a deleted pod stays terminating (its
    containers stopped, as a kubelet does) until it is removed."""
    patch = {"metadata": {"finalizers": [HOLD_FINALIZER] if hold else None}}
    try:
        kube.request(admin, "PATCH", f"{PODS}/{pod}", patch, "application/merge-patch+json")
    except ApiException as error:
        if hold or error.status != 404:
            raise


def set_pool_slots(client: httpx.Client, pool: str, slots: int) -> None:
    """Create `pool` with `slots`, or set its slots (a pool with none queues nothing). Airflow
    3.3 checks a patch of a pool other than default_pool as a whole pool."""
    fields = {"slots": slots, "include_deferred": False}
    response = client.patch(f"/pools/{pool}", json={"pool": pool, **fields})
    if response.status_code == 404:
        response = client.post("/pools", json={"name": pool, **fields})
    assert response.status_code in (200, 201), response.text


def clear_through_rest(
    client: httpx.Client, dag_id: str, run_id: str, *, reset_dag_runs: bool = True
) -> None:
    """What the UI's Clear button sends (reset_dag_runs is its default, true)."""
    body = {
        "dry_run": False,
        "dag_run_id": run_id,
        "task_ids": [TASK_ID],
        "only_failed": False,
        "reset_dag_runs": reset_dag_runs,
    }
    response = client.post(f"/dags/{dag_id}/clearTaskInstances", json=body)
    assert response.status_code == 200, response.text
    assert [ti["task_id"] for ti in response.json()["task_instances"]] == [TASK_ID]


def finish(
    airflow: AirflowStack, client: httpx.Client, recorder: PodRecorder, dag_id: str, run_id: str
) -> tuple[dict[str, Any], list[str], list[str]]:
    """Wait for the run's end; (its XCom, try 1's log lines, try 2's log lines)."""
    run = airflow.wait_run(client, dag_id, run_id, timeout=600)
    recorder.stop()
    try1 = messages(task_log(client, dag_id, run_id, TASK_ID, try_number=1))
    try2 = messages(task_log(client, dag_id, run_id, TASK_ID, try_number=2))
    shown = "\n".join(["--- try 1 ---", *try1, "--- try 2 ---", *try2])
    assert run["state"] == "success", shown + "\n--- scheduler ---\n" + airflow.tail("scheduler")
    ti = task_instance(client, dag_id, run_id, TASK_ID)
    assert ti["state"] == "success" and ti["try_number"] == 2, ti
    return xcom(client, dag_id, run_id, TASK_ID), try1, try2


def assert_fresh_run_after_the_old_driver(
    recorder: PodRecorder, dag_id: str, result: dict[str, Any], try2: list[str]
) -> None:
    """The new try ran a new application, created only once the old driver was gone."""
    old, new = drivers_of(recorder, dag_id)
    assert result["driver_pod"] == new and result["status"] == "success", result
    assert new.endswith("-2-driver") and old.endswith("-1-driver"), (old, new)
    assert not any("Adopting driver pod" in line for line in try2), "\n".join(try2)
    assert event_index(recorder, old, "DELETED") < event_index(recorder, new, "ADDED"), [
        (e.name, e.kind, e.phase) for e in recorder.events
    ]


def test_clear_of_a_task_waiting_in_the_worker_reruns_it_fresh(
    airflow: AirflowStack, real_plane: Any
) -> None:
    """deferrable=False: the clear makes Airflow kill the old try (its on_kill deletes its
    driver), and the new try submits the next number once that driver is gone."""
    dag_id = "e2e_clear_worker_side"
    recorder = PodRecorder(real_plane, E2E_NAMESPACE).start()
    started = time.monotonic()
    with airflow.client() as client:
        run_id, _ = start_until_driver_runs(airflow, client, recorder, dag_id, "running")
        clear_through_rest(client, dag_id, run_id)
        result, _, try2 = finish(airflow, client, recorder, dag_id, run_id)
    E2E_TIMINGS["clear while waiting in the worker"] = time.monotonic() - started
    assert_fresh_run_after_the_old_driver(recorder, dag_id, result, try2)


def test_clear_of_a_deferred_task_reruns_it_fresh(airflow: AirflowStack, real_plane: Any) -> None:
    """The order the user saw: the new try starts (and defers) before the old trigger's
    kill; it finds the old driver live, deletes it, and submits once it is gone."""
    dag_id = "e2e_clear_deferred"
    recorder = PodRecorder(real_plane, E2E_NAMESPACE).start()
    started = time.monotonic()
    with airflow.client() as client, ExitStack() as placeholders:
        placeholders.enter_context(trigger_id_placeholder(airflow, client))
        run_id, _ = start_until_driver_runs(airflow, client, recorder, dag_id, "deferred")
        placeholders.enter_context(trigger_id_placeholder(airflow, client))  # above try 1's
        clear_through_rest(client, dag_id, run_id)
        result, try1, try2 = finish(airflow, client, recorder, dag_id, run_id)
    E2E_TIMINGS["clear while deferred (REST), new try first"] = time.monotonic() - started
    assert_fresh_run_after_the_old_driver(recorder, dag_id, result, try2)
    shown = "\n".join(["--- try 1 ---", *try1, "--- try 2 ---", *try2])
    assert any("submitted before the DAG run was cleared" in line for line in try2), shown
    with airflow.client() as client:
        wait_old_kill_done(
            airflow,
            dag_id,
            lambda: messages(task_log(client, dag_id, run_id, TASK_ID, try_number=1)),
        )


def test_clear_of_a_deferred_task_when_the_old_kill_comes_first(
    airflow: AirflowStack, real_plane: Any, real_admin: Any
) -> None:
    """The other order: the old trigger's kill runs before the new try starts (its pool has
    no slot until then). The kill deletes its own driver and nothing else. The old pod is
    held terminating by the test's finalizer, so the new try finds it being deleted: it
    neither adopts nor deletes it, waits, and submits the next number only once it is gone;
    that runs to success, and nothing of either application is left."""
    dag_id = "e2e_clear_kill_first"
    recorder = PodRecorder(real_plane, E2E_NAMESPACE).start()
    started = time.monotonic()
    first: str | None = None
    with airflow.client() as client, ExitStack() as placeholders:
        placeholders.enter_context(trigger_id_placeholder(airflow, client))
        set_pool_slots(client, KILL_FIRST_POOL, 1)
        try:
            run_id, first = start_until_driver_runs(airflow, client, recorder, dag_id, "deferred")
            placeholders.enter_context(trigger_id_placeholder(airflow, client))  # above try 1's
            hold_deletion(real_admin, first, hold=True)
            set_pool_slots(client, KILL_FIRST_POOL, 0)  # the new try waits for a slot
            clear_through_rest(client, dag_id, run_id)
            killed = wait_old_kill_done(airflow, dag_id)
            held = task_instance(client, dag_id, run_id, TASK_ID)
            set_pool_slots(client, KILL_FIRST_POOL, 1)
            wait_for(
                lambda: (
                    any(
                        line.startswith("Waiting up to") and first in line
                        for line in messages(
                            task_log(client, dag_id, run_id, TASK_ID, try_number=2)
                        )
                    )
                    or None
                ),
                timeout=300,
                what="try 2 to wait for the old driver to be gone",
            )
            old_pod = kube.request(real_admin, "GET", f"{PODS}/{first}")
            drivers_while_waiting = drivers_of(recorder, dag_id)
        finally:
            if first is not None:
                hold_deletion(real_admin, first, hold=False)
            set_pool_slots(client, KILL_FIRST_POOL, 1)
        result, try1, try2 = finish(airflow, client, recorder, dag_id, run_id)
    E2E_TIMINGS["clear while deferred (REST), old kill first"] = time.monotonic() - started
    shown = "\n".join(
        ["--- try 1 ---", *try1, "--- kill ---", *(killed or []), "--- try 2 ---", *try2]
    )
    # The kill came first: the new try had not started; the kill deleted try 1's driver only.
    assert held["state"] in (None, "scheduled"), held
    deletions = [line for line in killed or [] if "driver pod" in line]
    assert deletions == [f"Deleted driver pod {E2E_NAMESPACE}/{first}"], shown
    # The new try saw it being deleted, and submitted nothing while it was there.
    assert old_pod["metadata"].get("deletionTimestamp"), old_pod["metadata"]
    assert drivers_while_waiting == [first], drivers_while_waiting
    assert not any("submitted before the DAG run was cleared" in line for line in try2), shown
    assert_fresh_run_after_the_old_driver(recorder, dag_id, result, try2)
    assert_nothing_left(real_admin, recorder, dag_id)


def test_clear_without_resetting_the_run_adopts_and_the_old_kill_spares_it(
    airflow: AirflowStack, real_plane: Any
) -> None:
    """clearTaskInstances with reset_dag_runs=false leaves Airflow's clear number as it was:
    the new try cannot tell the clear from a retry, adopts the live driver and marks it its
    own; the old trigger's kill, coming after (held as above), sees the mark
    and leaves the driver running, and try 2 follows it to its end."""
    dag_id = "e2e_clear_adopt"
    recorder = PodRecorder(real_plane, E2E_NAMESPACE).start()
    started = time.monotonic()
    with airflow.client() as client, ExitStack() as placeholders:
        placeholders.enter_context(trigger_id_placeholder(airflow, client))
        run_id, first = start_until_driver_runs(airflow, client, recorder, dag_id, "deferred")
        placeholders.enter_context(trigger_id_placeholder(airflow, client))  # above try 1's
        clear_through_rest(client, dag_id, run_id, reset_dag_runs=False)
        result, try1, try2 = finish(airflow, client, recorder, dag_id, run_id)
    E2E_TIMINGS["clear without reset, adopted, new try first"] = time.monotonic() - started
    shown = "\n".join(["--- try 1 ---", *try1, "--- try 2 ---", *try2])
    assert any("Adopting driver pod" in line for line in try2), shown
    # The old kill ran after the adoption and spared the driver (its log may be closed by
    # then: the marker holds what it logged).
    killed = wait_old_kill_done(airflow, dag_id) or []
    assert any(
        line.startswith(f"Not deleting driver pod {E2E_NAMESPACE}/{first}: it was adopted by try 2")
        for line in killed
    ), killed
    # One application, followed to its end by try 2.
    assert drivers_of(recorder, dag_id) == [first], recorder.events
    assert result["driver_pod"] == first and result["status"] == "success", result
