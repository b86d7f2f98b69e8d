"""The one follow loop (`follow_loop`), driven by hand as its runners drive it: what it
asks for, in which order, and the step it ends with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.application.following.follow_loop import (
    Looked,
    QueueNoted,
    ReadQueue,
    WaitForLook,
    follow_loop,
)
from airflow_provider_sparkk8s.application.following.follower import Following, FollowSpec
from airflow_provider_sparkk8s.monitoring.kueue_workload import view_of
from testenv.harness.pod_builders import APP, pod, running, terminated

RUNNING = pod("d", phase="Running", containers=[running()])
SUCCEEDED = pod("d", phase="Succeeded", containers=[terminated(0, "Completed")])


def clock(*times: float) -> Iterator[float]:
    return iter(times)


def test_it_waits_for_a_look_first_then_observes_it_and_ends_with_the_final_step() -> None:
    readings = clock(10.0, 11.0)
    loop = follow_loop(Following(FollowSpec(APP, "ns", "d")), lambda: next(readings))
    wait = next(loop)  # no clock read before the first look
    assert isinstance(wait, WaitForLook) and wait.following.state is None
    looked = loop.send(((RUNNING,), ()))
    assert isinstance(looked, Looked) and looked.before is None
    assert looked.step.transition is not None and looked.step.transition.state == "running"
    wait = loop.send(None)
    assert isinstance(wait, WaitForLook) and wait.following.state.state == "running"  # type: ignore[union-attr]
    looked = loop.send(((SUCCEEDED,), ()))
    assert isinstance(looked, Looked) and looked.before.state == "running"  # type: ignore[union-attr]
    with pytest.raises(StopIteration) as done:
        loop.send(None)
    assert done.value.value.final["status"] == "success"


def test_a_follower_that_knows_nothing_yet_looks_before_it_times_out_the_startup() -> None:
    spec = FollowSpec(APP, "ns", "d", start_time=0.0, startup_timeout=60)
    readings = clock(1000.0, 1000.0)
    loop = follow_loop(Following(spec), lambda: next(readings))
    wait = next(loop)
    assert isinstance(wait, WaitForLook) and wait.seconds_left(1000.0) == 0.01  # past: at once
    assert isinstance(loop.send(((RUNNING,), ())), Looked)
    assert isinstance(loop.send(None), WaitForLook)  # running: no startup timeout
    # No look before a deadline (a wait that timed out): the deadlines decide.
    loop = follow_loop(Following(spec), lambda: next(readings))
    next(loop)
    with pytest.raises(StopIteration) as done:
        loop.send(None)
    assert done.value.value.final["reason"] == "StartupTimeout"


def test_a_driver_kueue_holds_gets_its_workload_read_when_due() -> None:
    gated = pod("d", phase="Pending")
    gated["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-queue"
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    loop = follow_loop(Following(FollowSpec(APP, "ns", "d")), lambda: 5.0)
    next(loop)
    assert isinstance(loop.send(((gated,), ())), Looked)
    read = loop.send(None)
    assert read == ReadQueue("ns", APP, None)
    noted = loop.send(view_of(None, "cq"))
    assert isinstance(noted, QueueNoted)
    assert isinstance(loop.send(None), WaitForLook)
    # A follower that cannot read the Workload never asks.
    loop = follow_loop(Following(FollowSpec(APP, "ns", "d")), lambda: 5.0, reads_queue=False)
    next(loop)
    loop.send(((gated,), ()))
    assert isinstance(loop.send(None), WaitForLook)
