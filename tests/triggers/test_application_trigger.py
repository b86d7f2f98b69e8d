"""The trigger against an in-memory API: one final event, timeouts, restarts, logs, kill."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import pytest

from airflow_provider_sparkk8s.services.following.driver_log import LogCursor, take_new_lines
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from testenv.harness.pod_builders import APP, SCHEDULED, pod, running, terminated, waiting
from testenv.harness.waiting import until
from tests.monitoring.fake_kube import FakeKubeWithLogs
from tests.support.kills import answered


@pytest.fixture
def kube(monkeypatch):
    fake = FakeKubeWithLogs()

    async def client(self):
        return fake

    monkeypatch.setattr(SparkK8sApplicationTrigger, "_client", client)
    return fake


def make_trigger(**overrides) -> SparkK8sApplicationTrigger:
    kwargs: dict[str, Any] = {
        "application_id": APP,
        "namespace": "ns",
        "kubernetes_conn_id": "k8s",
        "driver_pod_name": "d",
        "resync_interval": 60.0,
        "stream_logs": False,
    }
    kwargs.update(overrides)
    return SparkK8sApplicationTrigger(**kwargs)


async def collect(trigger, timeout=10.0):
    async def drain():
        return [event async for event in trigger.run()]

    return await asyncio.wait_for(drain(), timeout)


def test_serialize_holds_ids_names_and_settings_only_and_round_trips():
    trigger = make_trigger(startup_timeout=60, run_timeout=3600, start_time="2026-01-01T00:00:00Z")
    path, kwargs = trigger.serialize()
    assert path == "airflow_provider_sparkk8s.triggers.spark_k8s.SparkK8sApplicationTrigger"
    assert set(kwargs) == {
        "application_id",
        "namespace",
        "kubernetes_conn_id",
        "driver_pod_name",
        "driver_container",
        "executor_container",
        "startup_timeout",
        "run_timeout",
        "queue_timeout",
        "start_time",
        "resync_interval",
        "stream_logs",
        "log_interval",
        "delete_on_kill",
        "upload_conn_id",
        "keep_uploaded_files",
        "try_number",
    }
    assert kwargs["start_time"] == 1767225600.0
    json.dumps(kwargs)  # plain JSON: nothing live, nothing secret
    again = SparkK8sApplicationTrigger(**kwargs)
    assert again.serialize() == (path, kwargs)


async def test_follows_a_driver_to_success_with_one_event(kube, stores):
    kube.put(pod("d", phase="Pending"))
    trigger = make_trigger()
    task = asyncio.create_task(collect(trigger))
    await until(lambda: kube.streams)
    kube.put(pod("d", phase="Running", conditions=SCHEDULED, containers=[running()]))
    kube.put(
        pod(
            "e1",
            role="executor",
            exec_id="1",
            phase="Running",
            containers=[running("spark-kubernetes-executor")],
        )
    )
    await until(lambda: trigger.last_state is not None and trigger.last_state.state == "running")
    kube.put(pod("d", phase="Succeeded", containers=[terminated(0, "Completed")]))
    events = await task
    assert len(events) == 1
    payload = events[0].payload
    assert payload["status"] == "success"
    assert (payload["state"], payload["exit_code"], payload["driver_pod"]) == ("succeeded", 0, "d")
    assert payload["executors"]["counts"] == {"running": 1}
    assert payload["application_id"] == APP
    assert stores == []  # the last trigger left: the store stopped
    assert kube.closed


async def test_failure_reports_reason_exit_code_and_failed_executors(kube):
    kube.put(pod("d", phase="Failed", containers=[terminated(1, "Error", "Job aborted")]))
    kube.put(
        pod(
            "e2",
            role="executor",
            exec_id="2",
            phase="Failed",
            containers=[terminated(137, "OOMKilled", name="spark-kubernetes-executor")],
        )
    )
    [event] = await collect(make_trigger())
    payload = event.payload
    assert (payload["status"], payload["reason"], payload["exit_code"]) == ("failed", "Error", 1)
    assert payload["termination_message"] == "Job aborted"
    assert payload["executors"]["failures"] == [
        {
            "pod_name": "e2",
            "executor_id": "2",
            "reason": "OOMKilled",
            "exit_code": 137,
            "message": None,
        }
    ]


async def test_a_new_instance_from_serialize_reports_a_completion_it_never_watched(kube):
    original = make_trigger(start_time=time.time() - 600, run_timeout=3600)
    kube.put(pod("d", phase="Succeeded", containers=[terminated(0)]))  # finished meanwhile
    restarted = SparkK8sApplicationTrigger(**original.serialize()[1])
    [event] = await collect(restarted)
    assert event.payload["status"] == "success"


async def test_a_vanished_driver_is_a_clear_failure(kube):
    [event] = await collect(make_trigger())
    payload = event.payload
    assert (payload["status"], payload["state"], payload["reason"]) == (
        "failed",
        "failed",
        "DriverPodNotFound",
    )
    assert "d of application" in payload["message"] and "no longer exists" in payload["message"]


async def test_driver_deleted_while_followed(kube):
    kube.put(pod("d", phase="Running", containers=[running()]))
    trigger = make_trigger()
    task = asyncio.create_task(collect(trigger))
    await until(lambda: trigger.last_state is not None and kube.streams)
    kube.delete("d")
    [event] = await task
    assert event.payload["reason"] == "DriverPodNotFound"


async def test_a_driver_deleted_right_after_it_ended_reports_how_it_ended(kube):
    """Its submitter cleans up before the trigger reads the store: latest-value delivery
    holds no driver, but the subscription kept its end."""
    kube.put(pod("d", phase="Running", containers=[running()]))
    trigger = make_trigger()
    task = asyncio.create_task(collect(trigger))
    await until(lambda: trigger.last_state is not None and kube.streams)
    kube.put(pod("d", phase="Succeeded", containers=[terminated(0, "Completed")]))
    kube.delete("d")
    [event] = await task
    assert (event.payload["status"], event.payload["exit_code"]) == ("success", 0)


async def test_startup_timeout_names_the_pending_reason(kube):
    kube.put(
        pod(
            "d",
            conditions=SCHEDULED,
            containers=[waiting("ImagePullBackOff", "Back-off pulling image")],
        )
    )
    [event] = await collect(make_trigger(startup_timeout=0.3, run_timeout=60))
    payload = event.payload
    assert (payload["status"], payload["reason"]) == ("timeout", "StartupTimeout")
    assert "ImagePullBackOff" in payload["message"] and "0.3s" in payload["message"]


async def test_startup_timeout_does_not_fire_once_running_but_run_timeout_does(kube):
    kube.put(pod("d", phase="Running", containers=[running()]))
    started = time.monotonic()
    [event] = await collect(make_trigger(startup_timeout=0.1, run_timeout=0.5))
    assert event.payload["reason"] == "RunTimeout"
    assert "running" in event.payload["message"]
    assert time.monotonic() - started >= 0.4


async def test_many_triggers_share_one_store(kube, stores):
    apps = [f"spark-{i:032x}" for i in range(20)]
    for i, app in enumerate(apps):
        kube.put(pod(f"d{i}", app=app, phase="Running", containers=[running()]))
    triggers = [
        make_trigger(application_id=app, driver_pod_name=f"d{i}") for i, app in enumerate(apps)
    ]
    tasks = [asyncio.create_task(collect(t)) for t in triggers]
    await until(lambda: all(t.last_state is not None for t in triggers))
    assert len(stores) == 1
    for i, app in enumerate(apps):
        kube.put(
            pod(
                f"d{i}",
                app=app,
                phase="Failed" if i % 2 else "Succeeded",
                containers=[terminated(i % 2)],
            )
        )
    results = [(await task)[0].payload["status"] for task in tasks]
    assert results == ["failed" if i % 2 else "success" for i in range(20)]
    assert kube.list_count() == 1


async def test_driver_log_is_streamed_once_even_across_polls(kube, capsys):
    start = "2026-01-01T00:00:00Z"
    kube.logs["d"] = ["2026-01-01T00:00:01.5Z starting", "2026-01-01T00:00:02.000000001Z stage 1"]
    kube.put(pod("d", phase="Running", containers=[running()]))
    trigger = make_trigger(stream_logs=True, log_interval=0.02, start_time=start)
    task = asyncio.create_task(collect(trigger))
    await until(lambda: len(kube.log_params) >= 3)
    kube.logs["d"].append("2026-01-01T00:00:02.5Z stage 2")
    await until(lambda: len(kube.log_params) >= 6)
    kube.logs["d"].append("2026-01-01T00:00:03Z done")
    kube.put(pod("d", phase="Succeeded", containers=[terminated(0)]))
    [event] = await task
    assert event.payload["status"] == "success"
    output = capsys.readouterr().out  # the trigger's structlog logger writes the task log here
    shown = [
        line.split("] [driver] ")[1].split("  ")[0].strip()
        for line in output.splitlines()
        if "] [driver] " in line
    ]
    assert shown == ["starting", "stage 1", "stage 2", "done"]
    assert kube.log_params[0]["sinceTime"] == start
    # later polls resume from the newest second seen, not from the start
    assert kube.log_params[-1]["sinceTime"] in ("2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z")
    assert all(
        p["container"] == "spark-kubernetes-driver" and p["timestamps"] == "true"
        for p in kube.log_params
    )


async def test_transitions_reach_the_task_log_and_no_logger_is_kept_while_waiting(kube, capsys):
    kube.put(pod("d", phase="Running", containers=[running()]))
    trigger = make_trigger()
    task = asyncio.create_task(collect(trigger))
    await until(lambda: trigger.last_state is not None)
    # A waiting trigger holds no logger of its own (Airflow's mixin caches one per instance).
    assert vars(trigger).get("_log") is None
    kube.put(pod("d", phase="Succeeded", containers=[terminated(0)]))
    [event] = await task
    assert event.payload["status"] == "success"
    # Airflow 3.0's stdlib logger may print a record twice here (its handler and the conftest's).
    said = re.findall(
        rf"application {APP}: (.*?)\s+\[airflow_provider_sparkk8s\.triggers\.spark_k8s\."
        r"SparkK8sApplicationTrigger\]",
        capsys.readouterr().out,
    )
    assert list(dict.fromkeys(said)) == ["running", "succeeded, Completed, exit code 0"], said


def test_take_new_lines_drops_what_the_cursor_has_seen():
    lines, cursor = take_new_lines(
        LogCursor(), "2026-01-01T00:00:01.1Z a\n2026-01-01T00:00:01.2Z b\n"
    )
    assert lines == ["a", "b"] and cursor.since_time() == "2026-01-01T00:00:01Z"
    again, cursor = take_new_lines(
        cursor,
        "2026-01-01T00:00:01.1Z a\n2026-01-01T00:00:01.2Z b\n"
        "2026-01-01T00:00:01.2Z b2\n2026-01-01T00:00:01.25Z c\n",
    )
    assert again == ["b2", "c"]
    # trailing zeros trimmed by the API still order correctly (.3 > .25)
    later, _ = take_new_lines(cursor, "2026-01-01T00:00:01.25Z c\n2026-01-01T00:00:01.3Z d\n")
    assert later == ["d"]


async def test_on_kill_deletes_the_driver_pod_and_tolerates_it_being_gone(kube):
    kube.put(pod("d", phase="Running", containers=[running()]))
    trigger = answered(make_trigger())
    await trigger.on_kill()
    assert "d" not in kube.pods
    assert ("DELETE", "/api/v1/namespaces/ns/pods/d", {}) in kube.requests
    await trigger.on_kill()  # 404: already gone, no error
    kube.requests.clear()
    await answered(make_trigger(delete_on_kill=False)).on_kill()
    assert kube.requests == []


class FakeSupervisor:
    """The triggerer's comms as a trigger sees them: answers GetTaskStates from `states`."""

    def __init__(self, states: dict[str, Any] | Exception):
        self.states = states
        self.asked: list[Any] = []

    async def asend(self, message: Any) -> Any:
        from airflow.sdk.execution_time.comms import TaskStatesResult

        self.asked.append(message)
        if isinstance(self.states, Exception):
            raise self.states
        return TaskStatesResult(task_states=self.states)


def run_by_triggerer(monkeypatch, trigger, supervisor: FakeSupervisor):
    """`trigger` as the triggerer runs it: its task instance set, the supervisor to ask."""
    from types import SimpleNamespace

    from airflow.sdk.execution_time import task_runner

    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", supervisor, raising=False)
    trigger.task_instance = SimpleNamespace(
        dag_id="dag", task_id="spark", run_id="run-1", map_index=-1, try_number=1
    )
    return trigger


@pytest.mark.parametrize("state", ["deferred", "up_for_retry"])
async def test_a_kill_of_a_moved_trigger_spares_the_driver(kube, monkeypatch, capsys, state):
    """Airflow 3.3 cancels a trigger that moved to another triggerer as if a user killed it;
    the task instance, read from Airflow at the kill, is still deferred: nothing is deleted."""
    kube.put(pod("d", phase="Running", containers=[running()]))
    supervisor = FakeSupervisor({"run-1": {"spark": state}})
    await run_by_triggerer(monkeypatch, make_trigger(try_number=1), supervisor).on_kill()
    assert "d" in kube.pods
    assert not [r for r in kube.requests if r[0] == "DELETE"]
    (asked,) = supervisor.asked
    assert (asked.dag_id, asked.task_ids, asked.run_ids, asked.map_index) == (
        "dag",
        ["spark"],
        ["run-1"],
        -1,
    )
    assert "Not deleting driver pod ns/d" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [{"run-1": {"spark": "failed"}}, {"run-1": {"spark": None}}, {}])
async def test_a_kill_after_a_mark_a_clear_or_a_deleted_run_deletes_the_driver(
    kube, monkeypatch, answer
):
    kube.put(pod("d", phase="Running", containers=[running()]))
    supervisor = FakeSupervisor(answer)
    await run_by_triggerer(monkeypatch, make_trigger(try_number=1), supervisor).on_kill()
    assert "d" not in kube.pods


@pytest.mark.parametrize(
    "supervisor", [FakeSupervisor(RuntimeError("API server unreachable")), None]
)
async def test_a_kill_that_cannot_read_the_task_instance_deletes_nothing(
    kube, monkeypatch, capsys, supervisor
):
    kube.put(pod("d", phase="Running", containers=[running()]))
    trigger = make_trigger(try_number=1)
    if supervisor is not None:
        run_by_triggerer(monkeypatch, trigger, supervisor)
    await trigger.on_kill()
    assert "d" in kube.pods
    out = capsys.readouterr().out
    assert "could not be read" in out
    assert ("API server unreachable" if supervisor else "not run by a triggerer") in out


async def test_a_kill_while_the_task_resumed_keeps_an_ended_driver(kube, monkeypatch):
    """Another triggerer delivered the final event and the task resumed: the ended driver
    is the resumed try's to report on, not this stale trigger's to delete."""
    kube.put(pod("d", phase="Failed", containers=[terminated(1, "Error")]))
    supervisor = FakeSupervisor({"run-1": {"spark": "running"}})
    await run_by_triggerer(monkeypatch, make_trigger(try_number=1), supervisor).on_kill()
    assert "d" in kube.pods


async def test_on_kill_cancelled_again_while_it_runs_still_deletes_the_driver(kube, monkeypatch):
    """Airflow 3.3 repeats the user-action cancel on every sync until the trigger ends; one
    landing while on_kill reads the connection must not stop the delete."""
    kube.put(pod("d", phase="Running", containers=[running()]))
    reading, release = asyncio.Event(), asyncio.Event()

    async def slow_client(self):
        reading.set()
        await release.wait()
        return kube

    monkeypatch.setattr(SparkK8sApplicationTrigger, "_client", slow_client)
    killing = asyncio.create_task(answered(make_trigger(try_number=1)).on_kill())
    await reading.wait()
    killing.cancel("__airflow_user_action__")  # the next sync's cancel
    with pytest.raises(asyncio.CancelledError):
        await killing
    release.set()
    await until(lambda: "d" not in kube.pods)


async def test_a_cancel_during_the_connection_read_keeps_its_message_and_closes_the_client(
    monkeypatch, stores
):
    """Airflow calls on_kill only when the CancelledError carries its user-action message.
    asgiref's thread hop (the connection read) would replace that error; the trigger builds
    the client behind a shield, so the message arrives, and the late client is closed."""
    import threading

    from asgiref.sync import sync_to_async

    from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook

    reading, release = threading.Event(), threading.Event()
    fake = FakeKubeWithLogs()
    closed = asyncio.Event()

    async def aclose():
        closed.set()

    fake.aclose = aclose

    def read_connection():
        reading.set()
        release.wait(5)

    async def get_async_client(self):
        await sync_to_async(read_connection)()
        return fake

    monkeypatch.setattr(SparkK8sHook, "get_async_client", get_async_client)

    async def as_the_triggerer_runs_it():  # iterated in the task itself, no wait_for around
        return [event async for event in make_trigger().run()]

    task = asyncio.create_task(as_the_triggerer_runs_it())
    await until(reading.is_set)
    task.cancel("user action")
    await asyncio.sleep(0.05)
    release.set()
    with pytest.raises(asyncio.CancelledError) as cancelled:
        await task
    assert cancelled.value.args == ("user action",)
    await asyncio.wait_for(closed.wait(), 5)
    assert stores == []


def test_the_machinery_loaded_off_the_loop_is_what_the_module_declares_for_typing():
    """`load_machinery` fills in exactly the names the TYPE_CHECKING block imports (a name
    in one list only would be a NameError at a trigger's first run, or a dead entry)."""
    import ast
    import inspect

    from airflow_provider_sparkk8s.triggers import spark_k8s

    tree = ast.parse(inspect.getsource(spark_k8s))
    (typing_block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    ]
    declared = {
        (node.module, alias.name)
        for node in typing_block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    loaded = {(module, name) for module, names in spark_k8s._MACHINERY.items() for name in names}
    assert declared == loaded
