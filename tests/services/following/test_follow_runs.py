"""Following one application through the sync pods service: the operator's worker-side
wait (`follow_application`) and the CLI's (`follow_driver`), on scripted snapshots."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from airflow_provider_sparkk8s.application.following.follower import FollowSpec
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.services.following.follow_runs import (
    follow_application,
    follow_driver,
)
from testenv.harness.pod_builders import APP, pod, running, terminated

EXECUTOR = "spark-kubernetes-executor"
RUNNING = pod("d", phase="Running", containers=[running()])
SUCCEEDED = pod("d", phase="Succeeded", containers=[terminated(0, "Completed")])


class ScriptedPods:
    """`DriverPods.follow` as a script of snapshots; records how it was asked and closed."""

    def __init__(self, *snapshots: tuple[dict, ...]) -> None:
        self.snapshots = snapshots
        self.asked: list[tuple[str, dict]] = []
        self.closed = False

    def follow(self, namespace: str, **kwargs: object) -> Iterator[tuple[dict, ...]]:
        self.asked.append((namespace, kwargs))
        try:
            yield from self.snapshots
            while True:  # a watch never ends on its own
                yield self.snapshots[-1]
        finally:
            self.closed = True

    def queue_view(self, namespace: str, workload: str, cluster_queue: str | None) -> None:
        raise AssertionError("no driver here is held by Kueue: nothing to read")


def test_the_worker_wait_follows_every_pod_to_the_final_event_and_closes_the_watch():
    e1 = pod("e1", role="executor", exec_id="1", phase="Running", containers=[running(EXECUTOR)])
    pods = ScriptedPods((pod("d"),), (RUNNING, e1), (RUNNING, e1), (SUCCEEDED,))
    said: list[str] = []
    step = follow_application(
        pods,  # type: ignore[arg-type]
        FollowSpec(APP, "ns", "d"),
        on_transition=lambda state: said.append(state.describe()),
        window_seconds=3,
    )
    assert step.final is not None and step.final["status"] == "success"
    assert step.final["executors"]["counts"] == {"deleted": 1}  # came and went
    assert said == ["submitted", "running", "succeeded, Completed, exit code 0"]
    assert pods.asked == [
        ("ns", {"label_selector": f"spark-app-selector={APP}", "window_seconds": 3})
    ]
    assert pods.closed


def test_the_clock_is_read_after_each_snapshot_for_the_timeouts():
    spec = FollowSpec(APP, "ns", "d", start_time=100.0, run_timeout=50)
    times = iter([120.0, 140.0, 151.0])
    step = follow_application(
        ScriptedPods((RUNNING,)),  # type: ignore[arg-type]
        spec,
        clock=lambda: next(times),
    )
    assert step.final is not None
    assert (step.final["status"], step.final["reason"]) == ("timeout", "RunTimeout")


def test_a_set_stop_event_ends_the_wait_with_a_failure():
    stop = threading.Event()
    stop.set()
    pods = ScriptedPods((RUNNING,))
    with pytest.raises(ApplicationFailed, match="killed while following ns:d"):
        follow_application(pods, FollowSpec(APP, "ns", "d"), stop=stop)  # type: ignore[arg-type]
    assert pods.closed


def test_the_cli_follows_the_driver_alone_and_hands_each_version_to_seen():
    seen: list[object] = []
    said: list[str] = []
    step = follow_driver(
        iter([pod("d"), pod("d"), RUNNING, SUCCEEDED, SUCCEEDED]),
        FollowSpec(APP, "ns", "d"),
        seen=seen.append,
        on_transition=lambda state: said.append(state.state),
    )
    assert step.following.ended is not None and step.following.ended.state == "succeeded"
    assert said == ["submitted", "running", "succeeded"]
    assert len(seen) == 4  # never read past the end


def test_a_deleted_driver_ends_the_cli_wait_as_unknown():
    step = follow_driver(iter([RUNNING, None]), FollowSpec(APP, "ns", "d"))
    assert step.following.ended is not None
    assert (step.following.ended.state, step.following.ended.reason) == (
        "unknown",
        "DriverPodNotFound",
    )
    assert step.final is not None and step.final["reason"] == "DriverPodNotFound"


def test_the_worker_wait_hands_every_look_and_the_state_before_it_to_on_look():
    from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
        DURATION,
        TIME_TO_RUNNING,
        look_metrics,
    )

    reported: list[tuple[str | None, list[str]]] = []

    def on_look(before, step):  # type: ignore[no-untyped-def]
        names = [m.name for m in look_metrics(before, step)]
        reported.append((before and before.state, names))

    pods = ScriptedPods((RUNNING,), (RUNNING,), (SUCCEEDED,))
    step = follow_application(pods, FollowSpec(APP, "ns", "d"), on_look=on_look)  # type: ignore[arg-type]
    assert step.final is not None and step.final["status"] == "success"
    assert reported == [
        (None, [TIME_TO_RUNNING]),
        ("running", []),
        ("running", [DURATION]),
    ]


def test_a_poller_keeps_looking_after_the_end_and_nothing_ends_again():
    from airflow_provider_sparkk8s.application.following.follower import Following
    from airflow_provider_sparkk8s.services.following.follow_runs import FollowRun

    said: list[str] = []
    run = FollowRun(
        Following(FollowSpec(APP, "ns", "d")), on_transition=lambda s: said.append(s.state)
    )
    assert run.look(((RUNNING,), ())).final is None
    assert run.look(((SUCCEEDED,), ())).final is not None
    after = run.look(((SUCCEEDED,), ()))
    assert after.final is None and after.following.ended is not None
    assert after.pods and said == ["running", "succeeded"]


def test_the_async_runner_answers_the_same_loop_from_an_event_loop():
    import asyncio

    from airflow_provider_sparkk8s.application.following.follower import Following
    from airflow_provider_sparkk8s.services.following.follow_runs import afollow

    looks = iter([((RUNNING,), ()), None, ((SUCCEEDED,), ())])
    waits: list[float | None] = []
    looked: list[str | None] = []

    async def next_look(wait):  # type: ignore[no-untyped-def]
        waits.append(wait.seconds_left(0.0))
        return next(looks)

    async def on_look(before, step):  # type: ignore[no-untyped-def]
        looked.append(before and before.state)

    async def read_queue(*_: object) -> None:
        raise AssertionError("no driver here is held by Kueue")

    step = asyncio.run(
        afollow(
            Following(FollowSpec(APP, "ns", "d")),
            next_look,
            read_queue=read_queue,
            on_look=on_look,
            on_transition=lambda state: None,
        )
    )
    assert step.final is not None and step.final["status"] == "success"
    assert waits == [None, None, None]  # no deadline: the waits do not time out
    assert looked == [None, "running"]
