"""Following one Spark application: what is remembered between two looks at its pods.

Spark's `ExecutorPodsLifecycleManager` keeps, between snapshots, the executors it has seen
and how they ended. Whoever follows an application here (the trigger, the sensor, the
operator's worker-side wait, the CLI) keeps the same in a `Following`: the executors that
came and went, the driver's ended version (a submitter may delete a finished driver before
anyone looks), the last state, the deadlines, and the cost's running total
(`application.cost`). Each hands over what it saw (`observe`) or the time (`tick`), and
acts on the `Step` it gets back: log its transition, send its final event.

Pure: frozen data in, new data out. Nothing here reads the clock; `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol

from airflow_provider_sparkk8s.application.cost import NO_COST, Cost, account
from airflow_provider_sparkk8s.application.events import final_event
from airflow_provider_sparkk8s.application.timeouts import seconds_to_next_deadline, timed_out
from airflow_provider_sparkk8s.monitoring.reducer import (
    DRIVER_CONTAINER,
    EXECUTOR_CONTAINER,
    ApplicationState,
    Pod,
    driver_has_ended,
    reduce_application,
    remember_executors,
    with_ended_driver,
)


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


# One shared empty memory: a waiting application that has seen no executor holds no dict.
NO_EXECUTORS: Mapping[str, Pod] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Following:
    """The memory between two looks. `ended` is set once: how the application ended (its
    terminal state, or a timeout's failure). Later looks still read the pods (a poller may
    keep looking), but end nothing again."""

    spec: Followed
    state: ApplicationState | None = None  # the last state read from the pods
    seen_executors: Mapping[str, Pod] = field(default_factory=lambda: NO_EXECUTORS)
    driver_end: Pod | None = None  # the driver's first succeeded or failed version
    ended: ApplicationState | None = None
    cost: Cost = NO_COST  # the pods that left, added up (`application.cost`)
    live: tuple[Pod, ...] = ()  # the pods of the last look: the store's own objects, no copy


@dataclass(frozen=True, slots=True)
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
    changed = previous is None or (previous.state, previous.reason) != (state.state, state.reason)
    ends = following.ended is None and state.terminal
    cost, live = following.cost, following.live
    if following.ended is None:  # after the end, the cost reported stays what it was
        cost = account(cost, live, present, earlier, now, final=ends)
        live = () if ends else present
    # Built directly, not with dataclasses.replace: this runs on every change of every
    # followed application, and replace() reads the fields anew each call.
    after = Following(spec, state, seen, driver_end, state if ends else following.ended, cost, live)
    return Step(
        after,
        pods=read,
        transition=state if changed else None,
        final=_final_event(spec, state, cost) if ends else None,
    )


def tick(following: Following, now: float) -> Step:
    """The deadlines at `now`: a step with the timeout's final event once one has passed."""
    spec = following.spec
    if following.ended is not None:
        return Step(following)
    failure = timed_out(
        following.state, now, spec.start_time, spec.startup_timeout, spec.run_timeout
    )
    if failure is None:
        return Step(following)
    live = following.live
    cost = account(following.cost, live, live, (), now, final=True)
    ended = replace(following, ended=failure, cost=cost, live=())
    return Step(ended, final=_final_event(spec, failure, cost))


def seconds_to_deadline(following: Following, now: float) -> float | None:
    """How long a wait may block before `tick` could end the following; None: no deadline."""
    spec = following.spec
    if following.ended is not None:
        return None
    return seconds_to_next_deadline(
        following.state, now, spec.start_time, spec.startup_timeout, spec.run_timeout
    )


def _final_event(spec: Followed, state: ApplicationState, cost: Cost) -> dict[str, Any]:
    driver = state.driver_pod or spec.driver_pod_name or "(spark-role=driver)"
    return final_event(spec.application_id, spec.namespace, driver, state, cost.to_dict())
