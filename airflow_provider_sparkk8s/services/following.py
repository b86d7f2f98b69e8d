"""Following one application from a worker or a terminal: the sync pods service's watch
handed, look by look, to the follower (`application.follower`) until its final step.

The trigger does the same in the triggerer over the shared store; the rules (states,
executors that came and went, timeouts, the final event) are the follower's, not written here.

The operator's worker-side wait follows every pod of the application::

    step = follow_application(
        driver_pods,
        FollowSpec(app.application_id, app.namespace, app.driver_pod, app.driver_container,
                   start_time=datetime.fromisoformat(app.submitted_at).timestamp(),
                   startup_timeout=self.startup_timeout, run_timeout=self.run_timeout),
        stop=self._stop,
        on_transition=lambda state: self.log.info(
            "Spark application %s: %s", app.application_id, state.describe()),
        window_seconds=math.ceil(self.poll_interval),
    )
    return step.final

The CLI follows the driver alone, as spark-submit's watcher does::

    step = follow_driver(
        events(client, namespace, pod_name),  # DriverPods(client).watch_driver(namespace, pod_name)
        FollowSpec(app_id, namespace, pod_name),
        seen=reporter.seen,
        on_transition=lambda state: _print(out, f"{namespace}:{pod_name} {state.describe()}"),
    )
    return step.following.ended  # the ApplicationState it ended in ("unknown" once deleted)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator

from airflow_provider_sparkk8s.application.follower import (
    Following,
    FollowSpec,
    Step,
    known_cluster_queue,
    note_queue,
    observe,
    queue_read_due,
    tick,
)
from airflow_provider_sparkk8s.errors import ApplicationFailed
from airflow_provider_sparkk8s.monitoring.kueue_workload import QueueView
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
from airflow_provider_sparkk8s.services.pods import (
    WATCH_SECONDS,
    DriverPods,
    Look,
    application_selector,
)

OnTransition = Callable[[ApplicationState], None]
# DriverPods.queue_view: (namespace, Workload name, known ClusterQueue) -> the view.
ReadQueue = Callable[[str, str, str | None], QueueView | None]
# Each look, with the state of the look before it: what the metrics are derived from.
OnLook = Callable[[ApplicationState | None, Step], None]


def _ignore(_: object) -> None:
    return None


def follow_snapshots(
    snapshots: Iterable[Iterable[Pod] | Look],
    spec: FollowSpec,
    *,
    stop: threading.Event | None = None,
    on_transition: OnTransition = _ignore,
    on_look: OnLook | None = None,
    clock: Callable[[], float] = time.time,
    read_queue: ReadQueue | None = None,
) -> Step:
    """The step that ends the application (its `final` is the final event).

    Each snapshot (the application's pods at one moment) is observed, then the deadlines
    are checked, so a wait reads its clock whenever a snapshot comes (a watch window's end
    brings one); a terminal state seen before the check is how it ended. Snapshots that run
    out read as no pods: the driver is gone.

    :param stop: set from another thread (a task's `on_kill`): raises `ApplicationFailed`.
    :param on_transition: called with each new (state, reason), in order.
    :param read_queue: reads the application's Kueue Workload when the follower says a
        read is due (a gated driver: its first look, then a slow cadence; once past it).
    :param on_look: called with every look's step and the state before it.
    """
    following = Following(spec)
    for look in _then_none(snapshots):
        pods, gone = look if isinstance(look, Look) else (look, ())
        if stop is not None and stop.is_set():
            raise ApplicationFailed(
                f"killed while following {spec.namespace}:{spec.driver_pod_name}"
            )
        now = clock()  # one reading per snapshot: the cost's intervals and the deadlines
        step = observe(following, pods, gone, now=now)
        if on_look is not None:
            on_look(following.state, step)
        if step.transition is not None:
            on_transition(step.transition)
        if step.final is None and read_queue is not None:
            step = _read_queue(step, read_queue, on_transition, clock)
        if step.final is None:
            step = tick(step.following, now)
        if step.final is not None:
            return step
        following = step.following
    raise AssertionError("unreachable: a look at no pods always ends the following")


def _read_queue(
    step: Step, read_queue: ReadQueue, on_transition: OnTransition, clock: Callable[[], float]
) -> Step:
    following = step.following
    if following.kueue is None or not queue_read_due(following, clock()):
        return step
    spec = following.spec
    view = read_queue(spec.namespace, spec.application_id, known_cluster_queue(following))
    noted = note_queue(following, view, clock())
    if noted.transition is not None:
        on_transition(noted.transition)
    return Step(noted.following, pods=step.pods)


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
    """Every pod of the application (driver and executors) by watch, until its final step;
    the clock is read at least every `window_seconds`. The watch is closed on return."""
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
    read_queue: ReadQueue | None = None,
) -> Step:
    """The driver pod alone (`DriverPods.watch_driver`: each version, None once it is gone),
    until its final step; `seen` gets every version first (the CLI's status reporter)."""

    def snapshots() -> Iterator[tuple[Pod, ...]]:
        for pod in versions:
            seen(pod)
            yield () if pod is None else (pod,)

    return follow_snapshots(snapshots(), spec, on_transition=on_transition, read_queue=read_queue)


def _then_none(snapshots: Iterable[Iterable[Pod] | Look]) -> Iterator[Iterable[Pod] | Look]:
    yield from snapshots
    yield ()
