"""Following one Spark application: what is remembered between two looks at its pods.

Spark's `ExecutorPodsLifecycleManager` keeps, between snapshots, the executors it has seen
and how they ended. Whoever follows an application here (the trigger, the sensor, the
operator's worker-side wait, the CLI) keeps the same in a `Following`: the executors that
came and went, the driver's ended version (a submitter may delete a finished driver before
anyone looks), the last state, the deadlines, and the cost's running total
(`application.following.cost`). Each hands over what it saw (`observe`) or the time (`tick`), and
acts on the `Step` it gets back: log its transition, send its final event.

A driver that waits on an image its registry says does not exist ends at that look, failed
with reason `ImageNotFound` (`monitoring.image_pull`): the startup timeout would only wait
for the same answer again.

A driver admitted through Kueue is also followed through its Workload: when `queue_read_due`
says so, the face reads it through its pods service and hands the view to `note_queue`,
which names the ClusterQueue and Kueue's reason in the queued state and remembers when the
admission came (the startup timeout counts from there; `queued_seconds` in the final event).

Pure: frozen data in, new data out. Nothing here reads the clock; `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import field, replace
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.following.cost import NO_COST, Cost, account
from airflow_provider_sparkk8s.application.following.events import final_event
from airflow_provider_sparkk8s.application.following.timeouts import (
    is_queued,
    seconds_to_next_deadline,
    timed_out,
)
from airflow_provider_sparkk8s.monitoring import kueue_workload
from airflow_provider_sparkk8s.monitoring.image_pull import image_not_found
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView
from airflow_provider_sparkk8s.monitoring.reducer import (
    DRIVER_CONTAINER,
    EXECUTOR_CONTAINER,
    ApplicationState,
    Pod,
    driver_has_ended,
    reduce_application,
    remember_executors,
    vanished_after_disruption,
    with_ended_driver,
)
from airflow_provider_sparkk8s.objects import name as pod_name
from airflow_provider_sparkk8s.objects import spark_role
from airflow_provider_sparkk8s.records import record

_T = TypeVar("_T")


class Followed(Protocol):
    """What the follower reads of whoever names the application: a `FollowSpec`, or any
    object with the same attributes (the trigger is one, so a waiting trigger keeps no copy)."""

    @property
    def application_id(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def driver_pod_name(self) -> str | None: ...
    @property
    def driver_container(self) -> str: ...
    @property
    def executor_container(self) -> str: ...
    @property
    def start_time(self) -> float: ...
    @property
    def startup_timeout(self) -> float | None: ...
    @property
    def run_timeout(self) -> float | None: ...
    @property
    def queue_timeout(self) -> float | None: ...


# One shared empty memory: a waiting application that has seen no executor holds no dict.
NO_EXECUTORS: Mapping[str, Pod] = MappingProxyType({})


@record(slots=True)
class FollowSpec:
    """Which application to follow, and its deadlines (seconds from `start_time`, epoch)."""

    application_id: str
    namespace: str
    driver_pod_name: str | None = None  # pins the driver; else the newest spark-role=driver
    driver_container: str = DRIVER_CONTAINER
    executor_container: str = EXECUTOR_CONTAINER
    start_time: float = 0.0
    startup_timeout: float | None = None
    run_timeout: float | None = None
    queue_timeout: float | None = None  # how long Kueue may hold the driver (from start_time)


@record(slots=True)
class KueueWait:
    """What the follower knows of an application admitted through Kueue."""

    created_at: float | None = None  # the driver pod's creation (epoch seconds)
    view: QueueView | None = None  # the last read of its Workload
    read_at: float | None = None
    read_while_queued: bool = False
    seen_queued: bool = False
    admitted_at: float | None = None  # Kueue's admission, else the first look past the gate
    admission_read: bool = False  # admitted_at is the Workload's own (or there is none)

    def queued_seconds(self) -> float | None:
        return kueue_workload.queued_seconds(self.created_at, self.admitted_at)


@record(slots=True)
class Following:
    """The memory between two looks. `ended` is set once: how the application ended (its
    terminal state, or a timeout's failure). Later looks still read the pods (a poller may
    keep looking), but end nothing again."""

    spec: Followed
    state: ApplicationState | None = None  # the last state read from the pods
    seen_executors: Mapping[str, Pod] = field(default_factory=lambda: NO_EXECUTORS)
    driver_end: Pod | None = None  # the driver's first succeeded or failed version
    ended: ApplicationState | None = None
    kueue: KueueWait | None = None  # None: not admitted through Kueue (as far as seen)
    cost: Cost = NO_COST  # the pods that left, added up (`application.following.cost`)
    live: tuple[Pod, ...] = ()  # the pods of the last look: the store's own objects, no copy


@record(slots=True)
class Step:
    """What one look (or tick) found."""

    following: Following
    pods: tuple[Pod, ...] = ()  # the pods the state was read from (with the driver's end)
    transition: ApplicationState | None = None  # a new (state, reason): worth a log line
    final: dict[str, Any] | None = None  # the final event's payload, on the step that ends


def observe(
    following: Following,
    pods: Iterable[Pod],
    history: Iterable[Pod] = (),
    now: float | None = None,
) -> Step:
    """The application's pods as they are now; `history` holds the versions seen since the
    previous look (ended executors and drivers that the latest pods no longer show); `now`
    ends the intervals of pods that are gone or still running at the end (None: the latest
    moment the pods record)."""
    spec = following.spec
    present, earlier = tuple(pods), tuple(history)
    seen = remember_executors(following.seen_executors, (*earlier, *present)) or NO_EXECUTORS
    driver_end = next((pod for pod in earlier if driver_has_ended(pod)), following.driver_end)
    read = with_ended_driver(present, driver_end)
    state = reduce_application(
        read,
        driver_pod_name=spec.driver_pod_name,
        driver_container=spec.driver_container,
        executor_container=spec.executor_container,
        seen_executors=seen,
    )
    previous = following.state
    if state.state == "unknown":
        # Evicted (or preempted) and deleted before its end was reported: the last version
        # seen says why (this look's history, which a store may hold, else the last look).
        state = vanished_after_disruption(_last_driver_state(spec, earlier) or previous, state)
    elif state.problem:
        # An image its registry says does not exist: no later look can start the driver.
        state = image_not_found(state, read)
    kueue = following.kueue
    if kueue is None and (is_queued(state) or (previous is None and _kueue_driver(read, state))):
        kueue = KueueWait(created_at=_created_at(read, state))
    if kueue is not None and is_queued(state):
        if not kueue.seen_queued:
            kueue = replace(kueue, seen_queued=True)
        if kueue.view is not None and kueue.view.status:
            state = replace(state, message=kueue.view.status)  # ClusterQueue, Kueue's reason
    changed = previous is None or (previous.state, previous.reason) != (state.state, state.reason)
    ends = following.ended is None and state.terminal
    cost, live = following.cost, following.live
    if following.ended is None:  # after the end, the cost reported stays what it was
        cost = account(cost, live, present, earlier, now, final=ends)
        live = () if ends else present
    # Built directly, not with dataclasses.replace: this runs on every change of every
    # followed application, and replace() reads the fields anew each call.
    ended = state if ends else following.ended
    after = Following(spec, state, seen, driver_end, ended, kueue, cost, live)
    return Step(
        after,
        pods=read,
        transition=state if changed else None,
        final=_final_event(spec, state, kueue, cost) if ends else None,
    )


def _last_driver_state(spec: Followed, history: tuple[Pod, ...]) -> ApplicationState | None:
    pinned = spec.driver_pod_name
    drivers = [
        pod
        for pod in history
        if spark_role(pod) == "driver" and (pinned is None or pod_name(pod) == pinned)
    ]
    if not drivers:
        return None
    return reduce_application(
        drivers[-1:],
        driver_pod_name=spec.driver_pod_name,
        driver_container=spec.driver_container,
        executor_container=spec.executor_container,
    )


def tick(following: Following, now: float) -> Step:
    """The deadlines at `now`: a step with the timeout's final event once one has passed."""
    spec = following.spec
    if following.ended is not None:
        return Step(following)
    kueue = following.kueue
    queued = is_queued(following.state)
    if kueue is not None and kueue.admitted_at is None and kueue.seen_queued and not queued:
        # Past the gate before the Workload was read again: the admission came by now.
        kueue = replace(kueue, admitted_at=now)
        following = replace(following, kueue=kueue)
    failure = _against_limits(timed_out, following, kueue, now)
    if failure is None:
        return Step(following)
    if kueue is not None and queued:
        kueue = replace(kueue, admitted_at=now)  # queued to the end: how long it waited
    live = following.live
    cost = account(following.cost, live, live, (), now, final=True)
    ended = replace(following, ended=failure, cost=cost, live=())
    return Step(ended, final=_final_event(spec, failure, kueue, cost))


def _against_limits(
    check: Callable[..., _T], following: Following, kueue: KueueWait | None, now: float
) -> _T:
    """`check` (timed_out or seconds_to_next_deadline) over the spec's limits, the startup
    counted from Kueue's admission where there is one."""
    spec = following.spec
    return check(
        following.state,
        now,
        spec.start_time,
        spec.startup_timeout,
        spec.run_timeout,
        queue_timeout=spec.queue_timeout,
        startup_from=None if kueue is None else kueue.admitted_at,
    )


def seconds_to_deadline(following: Following, now: float) -> float | None:
    """How long a wait may block before `tick` could end the following, or a Workload read
    is due; None: neither."""
    if following.ended is not None:
        return None
    kueue = following.kueue
    deadline = _against_limits(seconds_to_next_deadline, following, kueue, now)
    if kueue is None or kueue.read_at is None or not is_queued(following.state):
        return deadline
    interval = kueue_workload.read_interval(kueue.view, _waited(kueue, now))
    read = max(kueue.read_at + interval - now, 0.0) + 0.01
    return read if deadline is None else min(deadline, read)


# ------------------------------------------------------------------ Kueue's Workload


def _waited(kueue: KueueWait, now: float) -> float:
    return 0.0 if kueue.created_at is None else now - kueue.created_at


def known_cluster_queue(following: Following) -> str | None:
    """The ClusterQueue a previous read found (the LocalQueue is read once)."""
    kueue = following.kueue
    return None if kueue is None or kueue.view is None else kueue.view.cluster_queue


def queue_read_due(following: Following, now: float) -> bool:
    """Whether the face reads the application's Workload now (`kueue_workload.read_due`)."""
    kueue = following.kueue
    if kueue is None or following.ended is not None:
        return False
    return kueue_workload.read_due(
        is_queued(following.state),
        kueue.read_at,
        kueue.read_while_queued,
        kueue.admission_read,
        now,
        kueue_workload.read_interval(kueue.view, _waited(kueue, now)),
    )


def note_queue(following: Following, view: QueueView | None, now: float) -> Step:
    """A read of the Workload (None: it failed; the last view stays): the queued state names
    its ClusterQueue and Kueue's reason (a transition when that sentence changed), and the
    admission's time is remembered."""
    kueue = following.kueue or KueueWait()
    queued = is_queued(following.state)
    if view is None:
        kueue = replace(kueue, read_at=now, read_while_queued=queued)
        return Step(replace(following, kueue=kueue))
    admitted = kueue_workload.epoch(view.admitted_at)
    kueue = replace(
        kueue,
        view=view,
        read_at=now,
        read_while_queued=queued,
        admitted_at=kueue.admitted_at if admitted is None or kueue.admission_read else admitted,
        admission_read=kueue.admission_read or admitted is not None or not view.found,
    )
    state = following.state
    transition = None
    if state is not None and is_queued(state) and view.status and state.message != view.status:
        state = transition = replace(state, message=view.status)
    return Step(replace(following, state=state, kueue=kueue), transition=transition)


def _driver_pod(pods: tuple[Pod, ...], state: ApplicationState) -> Pod | None:
    return next((p for p in pods if objects.name(p) == state.driver_pod), None)


def _kueue_driver(pods: tuple[Pod, ...], state: ApplicationState) -> bool:
    driver = _driver_pod(pods, state) if state.driver_pod else None
    labels = ((driver or {}).get("metadata") or {}).get("labels") or {}
    return objects.KUEUE_QUEUE_LABEL in labels


def _created_at(pods: tuple[Pod, ...], state: ApplicationState) -> float | None:
    driver = _driver_pod(pods, state)
    return None if driver is None else kueue_workload.epoch(objects.created_at(driver))


def _final_event(
    spec: Followed, state: ApplicationState, kueue: KueueWait | None, cost: Cost
) -> dict[str, Any]:
    driver = state.driver_pod or spec.driver_pod_name or "(spark-role=driver)"
    queued = None if kueue is None else kueue.queued_seconds()
    return final_event(
        spec.application_id,
        spec.namespace,
        driver,
        state,
        queued_seconds=queued,
        cost=cost.to_dict(),
    )
