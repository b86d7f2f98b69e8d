"""Following one application: the two runners of the one follow loop (`follow_loop`).

The loop (look, observe, the Kueue Workload when due, the deadlines) is written once, in
`application.following.follow_loop`; the rules are the follower's. A runner only answers what the
loop asks: `FollowRun` a look at a time from a thread (the operator's worker-side wait
and the CLI through `follow_snapshots`, the sensor a poke at a time), `afollow` from the
triggerer's event loop, waiting on the shared store with the loop's deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from airflow_provider_sparkk8s.application.following.follow_loop import (
    FollowLoop,
    Looked,
    ReadQueue,
    Seen,
    WaitForLook,
    follow_loop,
)
from airflow_provider_sparkk8s.application.following.follower import Following, FollowSpec, Step
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
from airflow_provider_sparkk8s.services.pods.driver_pods import (
    WATCH_SECONDS,
    DriverPods,
    Look,
    application_selector,
)

OnTransition = Callable[[ApplicationState], None]
# DriverPods.queue_view: (namespace, Workload name, known ClusterQueue) -> the view.
ReadQueueView = Callable[[str, str, str | None], QueueView | None]
# Each look, with the state of the look before it: what the metrics are derived from.
OnLook = Callable[[ApplicationState | None, Step], None]


def _ignore(*_: object) -> None:
    return None


class FollowRun:
    """The loop driven a look at a time: `look` hands one in and answers what the loop asks
    before it wants the next (a Workload read, the callbacks).

    After the end a poller may keep looking (the sensor pokes until its verdict): the
    follower then reads the pods and ends nothing again."""

    def __init__(
        self,
        following: Following,
        *,
        read_queue: ReadQueueView | None = None,
        on_transition: OnTransition = _ignore,
        on_look: OnLook = _ignore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.read_queue = read_queue  # a poller may hand each look its own client's
        self._on_transition = on_transition
        self._on_look = on_look
        self._clock = clock
        self._start(following)

    def _start(self, following: Following) -> None:
        self._loop: FollowLoop = follow_loop(
            following, self._clock, reads_queue=self.read_queue is not None
        )
        next(self._loop)  # up to its first wait for a look (no clock read before it)
        self.following = following

    def look(self, seen: Seen) -> Step:
        """One look: the step that ended the following, else one with the pods it read and
        the memory after the round (its Workload read and deadlines)."""
        answer: Any = seen
        pods: tuple[Pod, ...] = ()
        while True:
            try:
                need = self._loop.send(answer)
            except StopIteration as done:
                self._start(done.value.following)
                return done.value
            answer = None
            if isinstance(need, WaitForLook):
                self.following = need.following
                return Step(need.following, pods=pods)
            if isinstance(need, ReadQueue):
                answer = self._read(need)
                continue
            if isinstance(need, Looked):
                pods = need.step.pods
                self._on_look(need.before, need.step)
            if need.step.transition is not None:
                self._on_transition(need.step.transition)

    def _read(self, need: ReadQueue) -> QueueView | None:
        assert self.read_queue is not None  # the loop asks only when it may
        return self.read_queue(need.namespace, need.workload, need.cluster_queue)


async def afollow(
    following: Following,
    next_look: Callable[[WaitForLook], Awaitable[Seen | None]],
    *,
    read_queue: Callable[[str, str, str | None], Awaitable[QueueView | None]],
    on_look: Callable[[ApplicationState | None, Step], Awaitable[None]],
    on_transition: OnTransition,
    clock: Callable[[], float] = time.time,
) -> Step:
    """The loop in an event loop (the trigger): `next_look` waits for the next look, at most
    the wait's `seconds_left` (None: a deadline or a Workload read is due); the step that
    ends the following."""
    loop = follow_loop(following, clock)
    answer: Any = None
    while True:
        try:
            need = loop.send(answer)
        except StopIteration as done:
            return done.value
        answer = None
        if isinstance(need, WaitForLook):
            answer = await next_look(need)
        elif isinstance(need, ReadQueue):
            answer = await read_queue(need.namespace, need.workload, need.cluster_queue)
        else:
            if isinstance(need, Looked):
                await on_look(need.before, need.step)
            if need.step.transition is not None:
                on_transition(need.step.transition)


def follow_snapshots(
    snapshots: Iterable[Iterable[Pod] | Look],
    spec: FollowSpec,
    *,
    stop: threading.Event | None = None,
    on_transition: OnTransition = _ignore,
    on_look: OnLook | None = None,
    clock: Callable[[], float] = time.time,
    read_queue: ReadQueueView | None = None,
) -> Step:
    """The step that ends the application (its `final` is the final event).

    Each snapshot (the application's pods at one moment) is a look of the loop; the clock
    is read once a look, so a wait reads it whenever a snapshot comes (a watch window's end
    brings one). Snapshots that run out read as no pods: the driver is gone.

    :param stop: set from another thread (a task's `on_kill`): raises `ApplicationFailed`.
    :param on_transition: called with each new (state, reason), in order.
    :param read_queue: reads the application's Kueue Workload when the follower says a
        read is due (a gated driver: its first look, then a slow cadence; once past it).
    :param on_look: called with every look's step and the state before it.
    """
    run = FollowRun(
        Following(spec),
        read_queue=read_queue,
        on_transition=on_transition,
        on_look=on_look or _ignore,
        clock=clock,
    )
    for look in _then_none(snapshots):
        if stop is not None and stop.is_set():
            raise ApplicationFailed(
                f"killed while following {spec.namespace}:{spec.driver_pod_name}"
            )
        step = run.look(look if isinstance(look, Look) else (look, ()))
        if step.final is not None:
            return step
    raise AssertionError("unreachable: a look at no pods always ends the following")


def follow_application(
    driver_pods: DriverPods,
    spec: FollowSpec,
    *,
    stop: threading.Event | None = None,
    on_transition: OnTransition = _ignore,
    on_look: OnLook | None = None,
    window_seconds: int = WATCH_SECONDS,
    clock: Callable[[], float] = time.time,
) -> Step:
    """The operator's worker-side wait: every pod of the application (driver and executors)
    by watch, until its final step; the clock is read at least every `window_seconds`. The
    watch is closed on return."""
    watch = driver_pods.follow(
        spec.namespace,
        label_selector=application_selector(spec.application_id),
        window_seconds=window_seconds,
    )
    try:
        return follow_snapshots(
            watch,
            spec,
            stop=stop,
            on_transition=on_transition,
            on_look=on_look,
            clock=clock,
            read_queue=driver_pods.queue_view,
        )
    finally:
        close = getattr(watch, "close", None)  # a generator: closing it ends the stream
        if close is not None:
            close()


def follow_driver(
    versions: Iterable[Pod | None],
    spec: FollowSpec,
    *,
    seen: Callable[[Pod | None], None] = _ignore,
    on_transition: OnTransition = _ignore,
    read_queue: ReadQueueView | None = None,
) -> Step:
    """The CLI's wait, as spark-submit's watcher: the driver pod alone
    (`DriverPods.watch_driver`: each version, None once it is gone), until its final step;
    `seen` gets every version first (the CLI's status reporter)."""

    def snapshots() -> Iterator[tuple[Pod, ...]]:
        for pod in versions:
            seen(pod)
            yield () if pod is None else (pod,)

    return follow_snapshots(snapshots(), spec, on_transition=on_transition, read_queue=read_queue)


def _then_none(snapshots: Iterable[Iterable[Pod] | Look]) -> Iterator[Iterable[Pod] | Look]:
    yield from snapshots
    yield ()
