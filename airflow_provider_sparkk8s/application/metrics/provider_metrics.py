"""The provider's metrics: their names, their tags, and what one look at an application
reports (docs/metrics.md has the table).

Pure: nothing here sends, reads a clock or imports Airflow. Values come from the pods' own
timestamps (creationTimestamp, status.startTime, the driver container's startedAt and
finishedAt), so a metric says what the API server recorded, not when a follower happened to
look. Whoever follows an application hands each `Step` to `look_metrics` with the state it
had before, and sends what comes back through a `MetricsSink`; the faces bind that sink to
Airflow's Stats (`hooks/airflow_stats.py`), so StatsD, Datadog or OpenTelemetry is whatever
the deployment's `[metrics]` section configured.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Literal, NamedTuple, Protocol

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.following.follower import Step
from airflow_provider_sparkk8s.monitoring.reducer import (
    DRIVER_CONTAINER,
    TERMINAL_STATES,
    ApplicationState,
    Pod,
)

PREFIX = "sparkk8s."
SUBMIT_LATENCY = PREFIX + "submit.latency"
TIME_TO_RUNNING = PREFIX + "driver.time_to_running"
QUEUE_WAIT = PREFIX + "driver.queue_wait"
PENDING = PREFIX + "driver.pending"
EXECUTOR_FAILURES = PREFIX + "executor.failures"
DURATION = PREFIX + "application.duration"
STORE_APPLICATIONS = PREFIX + "store.applications"
WATCH_RELISTS = PREFIX + "store.watch_relists"

# The states a store's gauge is sent for, every time (a zero clears a state that emptied).
STORE_STATES = ("submitted", "pending", "running", "succeeded", "failed", "unknown")

Tags = Mapping[str, str]
Kind = Literal["incr", "gauge", "timing"]


class MetricsSink(Protocol):
    """Where measurements go. `enabled` False: the deployment sends no metrics, and callers
    skip the work of deriving them."""

    @property
    def enabled(self) -> bool: ...

    def incr(self, name: str, count: int, tags: Tags) -> None: ...

    def gauge(self, name: str, value: float, tags: Tags) -> None: ...

    def timing(self, name: str, seconds: float, tags: Tags) -> None: ...

    def defer(self, work: DeferredWork) -> None:
        """Run `work` when the sink next writes, or now. The work sends its metrics itself,
        or returns them (a look's measurements and the tags they carry) for the sink to
        send with the others it runs then."""


class NoMetrics:
    """The sink of a deployment without metrics (and of code run outside Airflow)."""

    enabled = False

    def incr(self, name: str, count: int, tags: Tags) -> None:
        return None

    def gauge(self, name: str, value: float, tags: Tags) -> None:
        return None

    def timing(self, name: str, seconds: float, tags: Tags) -> None:
        return None

    def defer(self, work: DeferredWork) -> None:
        return None


NO_METRICS: MetricsSink = NoMetrics()


class Measurement(NamedTuple):
    """A tuple, not a frozen dataclass: a follower makes one per timer, and a frozen
    dataclass's __init__ (one object.__setattr__ per field) costs three times as much."""

    kind: Kind
    name: str
    value: float
    tags: Tags  # beyond the application's own (namespace, dag_id, task_id)


# What deferred work gives back: nothing (it sent its metrics itself), or a look's
# measurements and the application's tags, for the sink to send.
DeferredWork = Callable[[], tuple[Sequence[Measurement], Tags] | None]


def send(sink: MetricsSink, measurements: Iterable[Measurement], tags: Tags) -> None:
    """Each measurement with the application's tags added to its own. A sink that takes a
    look's measurements at once (`send_measurements`, the batched StatsD sink) gets them so:
    one call, and no merged dict per measurement once it knows the names."""
    many = getattr(sink, "send_measurements", None)
    if many is not None:
        many(measurements, tags)
        return
    for m in measurements:
        merged = {**tags, **m.tags} if m.tags else tags
        if m.kind == "incr":
            sink.incr(m.name, int(m.value), merged)
        elif m.kind == "gauge":
            sink.gauge(m.name, m.value, merged)
        else:
            sink.timing(m.name, m.value, merged)


def task_tags(namespace: str, dag_id: str | None, task_id: str | None) -> dict[str, str]:
    """The tags every application metric carries; a missing id is left out, not sent empty."""
    tags = {"namespace": namespace}
    if dag_id:
        tags["dag_id"] = dag_id
    if task_id:
        tags["task_id"] = task_id
    return tags


class SharedTags(Mapping[str, str]):
    """One task's tags, read-only, shared by all its looks. Hashed by identity (equal by
    content, as any mapping): the batched sink remembers a wire name under the object
    itself, where it would otherwise build and hash the tags' items for every look."""

    __slots__ = ("_tags",)

    def __init__(self, tags: Mapping[str, str]):
        self._tags = MappingProxyType(dict(tags))

    def __getitem__(self, key: str) -> str:
        return self._tags[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tags)

    def __len__(self) -> int:
        return len(self._tags)

    def __repr__(self) -> str:
        return f"SharedTags({dict(self._tags)!r})"

    __hash__ = object.__hash__


@functools.lru_cache(maxsize=4096)
def shared_task_tags(namespace: str, dag_id: str | None, task_id: str | None) -> SharedTags:
    """`task_tags`, one read-only mapping per task: a triggerer following thousands of
    applications of a few hundred tasks builds each once, not once per look."""
    return SharedTags(task_tags(namespace, dag_id, task_id))


def submit_latency(seconds: float) -> Measurement:
    """From the submission's start (uploads included) to the API server's answer to the
    driver pod's create."""
    return Measurement("timing", SUBMIT_LATENCY, max(0.0, seconds), {})


def may_report(before: ApplicationState | None, step: Step) -> bool:
    """Whether `look_metrics` can find anything in this look, from the two states alone
    (no pod is read): a follower hands the sink only such looks. Most looks at a live
    application (an executor comes or goes, a status is rewritten) report nothing."""
    state = step.following.state
    if state is None:
        return False
    if step.final is not None or (step.transition is not None and state.state == "pending"):
        return True
    failures = state.executors.failures
    if failures and (before is None or failures != before.executors.failures):
        return True
    if before is not None and (before.state == "running" or before.terminal):
        return False  # started before: no start to time
    return state.state == "running" or state.terminal


def look_metrics(
    before: ApplicationState | None, step: Step, driver_container: str = DRIVER_CONTAINER
) -> tuple[Measurement, ...]:
    """What one look at an application reports, given the state of the look before it.

    - a transition into `pending` counts its reason;
    - each executor failure not seen before counts, by its reason;
    - the first look that finds the driver started (running, or already ended) times its
      creation -> container start, and for a driver submitted to a Kueue queue its
      creation -> status.startTime (the admission gate's wait, then scheduling);
    - the look that ends the application times creation -> the driver container's finish.
    A follower that starts again (a restarted triggerer) reports its first look again.
    """
    state = step.following.state
    if state is None:
        return ()
    found: list[Measurement] = []
    now = state.state
    if step.transition is not None and now == "pending":
        found.append(Measurement("incr", PENDING, 1, {"reason": state.reason or "Pending"}))
    if state.executors.failures:
        found.extend(_new_executor_failures(before, state))
    # The states by name, not through `terminal`: this runs on every look a sink is handed.
    ended = now in TERMINAL_STATES
    started_before = before is not None and (
        before.state == "running" or before.state in TERMINAL_STATES
    )
    starts = not started_before and (now == "running" or ended)
    ends = ended and step.final is not None
    if not (starts or ends):  # most looks: nothing more to read
        return tuple(found)
    driver = _driver(step.pods, state)
    created = None if driver is None else _created(driver)  # one parse for both timers
    if driver is None or created is None:
        return tuple(found)
    if starts:
        found.extend(_start_times(driver, created, state, driver_container))
    if ends:
        finished = _moment(state.finished_at)
        if finished is not None:
            found.append(
                Measurement("timing", DURATION, _between(created, finished), {"state": now})
            )
    return tuple(found)


def store_gauges(states: Iterable[str | None]) -> tuple[Measurement, ...]:
    """The live applications of a store, by the state their followers last read; every
    state in STORE_STATES is sent, zero included (applications not yet seen are left out)."""
    counts = dict.fromkeys(STORE_STATES, 0)
    for state in states:
        if state is not None:
            counts[state] = counts.get(state, 0) + 1
    return tuple(
        Measurement("gauge", STORE_APPLICATIONS, n, {"state": s}) for s, n in counts.items()
    )


def watch_relist() -> Measurement:
    return Measurement("incr", WATCH_RELISTS, 1, {})


# ------------------------------------------------------------------ readers of the pods


def _new_executor_failures(
    before: ApplicationState | None, state: ApplicationState
) -> list[Measurement]:
    failures = state.executors.failures
    known = {f.pod_name for f in before.executors.failures} if before is not None else set()
    return [
        Measurement("incr", EXECUTOR_FAILURES, 1, {"reason": f.reason or "Error"})
        for f in failures
        if f.pod_name not in known
    ]


def _start_times(
    driver: Pod, created: datetime, state: ApplicationState, container: str
) -> list[Measurement]:
    found = []
    started = _moment(state.started_at) or _container_started(driver, container)
    if started is not None:
        found.append(
            Measurement("timing", TIME_TO_RUNNING, max(0.0, _between(created, started)), {})
        )
    if ((driver.get("metadata") or {}).get("labels") or {}).get(objects.KUEUE_QUEUE_LABEL):
        admitted = _moment((driver.get("status") or {}).get("startTime"))
        if admitted is not None:
            found.append(
                Measurement("timing", QUEUE_WAIT, max(0.0, _between(created, admitted)), {})
            )
    return found


def _driver(pods: Sequence[Pod], state: ApplicationState) -> Pod | None:
    # Read directly, not through objects.name: the pods are the API server's dicts here.
    wanted = state.driver_pod
    for pod in pods:
        if (pod.get("metadata") or {}).get("name") == wanted:
            return pod
    return None


def _created(pod: Pod | None) -> datetime | None:
    return None if pod is None else _moment((pod.get("metadata") or {}).get("creationTimestamp"))


def _container_started(pod: Pod, container: str) -> datetime | None:
    """startedAt of the driver container's terminated state: a driver that ended before any
    look saw it running."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if isinstance(status, Mapping) and status.get("name") == container:
            terminated = (status.get("state") or {}).get("terminated") or {}
            return _moment(terminated.get("startedAt"))
    return None


def _moment(timestamp: object) -> datetime | None:
    """An RFC 3339 timestamp as the API server writes it; None otherwise."""
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp)
    except ValueError:
        return None


def _between(start: datetime, end: datetime) -> float:
    """Seconds from `start` to `end`: one subtraction, where two epoch conversions cost twice
    as much; a timestamp without a zone (never the API server's) is read as local time."""
    try:
        return (end - start).total_seconds()
    except TypeError:  # one aware, one naive
        return end.timestamp() - start.timestamp()
