"""Pods in, application state out: the pure core of monitoring.

The trigger, the sensor and the store's tests all read a Spark application the same way:
hand the application's pods (plain dicts, as the API server returns them) to
`reduce_application` and get an `ApplicationState` back. Nothing here does I/O, and the
reducer never raises on odd input: a pod missing fields reads as "not known yet".

Decisions, and why:
- The outcome comes from the driver *container's* terminated state, not the pod phase, since a
  side-car can keep the pod Running after the driver exited. The phase is only a fallback when
  the container is absent from the status (a wrong container name, or an evicted pod).
- "submitted" means the driver pod exists but the scheduler has not looked at it yet;
  "pending" means it was looked at and is not running yet; `problem` marks pending reasons
  that will not fix themselves (image pulls, bad config, unschedulable) so a timeout can
  name them.
- Executors are classified the way Spark's driver does it (`ExecutorPodsSnapshot.toState`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, field, replace
from typing import Any, Literal

from airflow_provider_sparkk8s.monitoring.disruption import condition as disruption_condition
from airflow_provider_sparkk8s.monitoring.disruption import explains, marked_after_end
from airflow_provider_sparkk8s.monitoring.disruption import marked_at as disruption_marked_at
from airflow_provider_sparkk8s.monitoring.disruption import message as disruption_message

# Re-exported: the faces take the default container names from the reducer they feed.
from airflow_provider_sparkk8s.objects import DRIVER_CONTAINER as DRIVER_CONTAINER
from airflow_provider_sparkk8s.objects import EXECUTOR_CONTAINER as EXECUTOR_CONTAINER
from airflow_provider_sparkk8s.objects import (
    annotation,
    being_deleted,
    executor_id,
    kueue_queue,
    newest_driver,
    spark_role,
)
from airflow_provider_sparkk8s.objects import name as pod_name
from airflow_provider_sparkk8s.records import record

Pod = Mapping[str, Any]
State = Literal["submitted", "pending", "running", "succeeded", "failed", "unknown"]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "unknown"})

# A driver Kueue's admission gate holds: waiting for quota, not stuck.
QUEUED_BY_KUEUE = "QueuedByKueue"
EXIT_EXCEPTION_ANNOTATION = "spark.exit-exception"
EXIT_EXCEPTION_MAX = 1000

# Waiting reasons that will not resolve on their own; ContainerCreating and
# PodInitializing are the normal path and are not problems.
PROBLEM_WAITING_REASONS: frozenset[str] = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "ErrImageNeverPull",
        "CrashLoopBackOff",
    }
)


@record(slots=True)
class ExecutorFailure:
    """One executor that ended badly (failed, or killed for memory)."""

    pod_name: str
    executor_id: str | None
    reason: str | None
    exit_code: int | None
    message: str | None


@record(slots=True)
class ExecutorSummary:
    """Executor counts by Spark's pod states, and the failed ones with their reasons."""

    counts: Mapping[str, int] = field(default_factory=dict)
    failures: tuple[ExecutorFailure, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# One summary for every application without executors (most states a trigger keeps), not one
# per state: frozen, and nothing writes to its counts.
NO_EXECUTORS = ExecutorSummary()


@record(slots=True)
class ApplicationState:
    """What a Spark application looks like from its pods, at one moment."""

    state: State
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    termination_message: str | None = None
    driver_pod: str | None = None
    problem: bool = False
    executors: ExecutorSummary = NO_EXECUTORS
    started_at: str | None = None
    finished_at: str | None = None
    # Spark's exit exception (4.1+, `spark.kubernetes.driver.annotateExitException`): the
    # first line of the `spark.exit-exception` annotation the driver wrote on its own pod.
    exit_exception: str | None = None
    # Why the cluster took the driver away: the reason of a true `DisruptionTarget`
    # condition (PreemptionByScheduler, DeletionByTaintManager, EvictionByEvictionAPI,
    # TerminationByKubelet), else "Deleted" for a driver pod being deleted.
    disruption: str | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for trigger events and XCom)."""
        data = asdict(self)
        data["executors"]["counts"] = dict(self.executors.counts)
        data["executors"]["failures"] = [asdict(f) for f in self.executors.failures]
        return data

    def describe(self) -> str:
        """One line for logs and exception messages."""
        parts: list[str] = [self.state]
        if self.reason:
            parts.append(self.reason)
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        text = ", ".join(parts)
        detail = self.termination_message or self.message
        return f"{text}: {detail}" if detail else text


# ---------------------------------------------------------------- safe field access


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _container_status(pod: Pod, name: str, key: str = "containerStatuses") -> Mapping[str, Any]:
    for status in _list(_dict(pod.get("status")).get(key)):
        if _dict(status).get("name") == name:
            return _dict(status)
    return {}


def _terminated(container_status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    terminated = _dict(container_status.get("state")).get("terminated")
    return _dict(terminated) if isinstance(terminated, Mapping) else None


def _phase(pod: Pod) -> str:
    phase = _dict(pod.get("status")).get("phase")
    return phase.lower() if isinstance(phase, str) else ""


# ---------------------------------------------------------------- the driver


def _pick_driver(pods: Iterable[Pod], driver_pod_name: str | None) -> Pod | None:
    candidates = [p for p in pods if isinstance(p, Mapping)]
    if driver_pod_name:
        named = [p for p in candidates if pod_name(p) == driver_pod_name]
        return named[0] if named else None
    # After a resubmission with the same app id the newest driver is the one that counts.
    return newest_driver(candidates)


def _pending_problem(pod: Pod) -> tuple[str, str | None] | None:
    """The first reason that will keep this pod from starting, with its message."""
    for key in ("initContainerStatuses", "containerStatuses"):
        for status in _list(_dict(pod.get("status")).get(key)):
            waiting = _dict(_dict(_dict(status).get("state")).get("waiting"))
            reason = _str(waiting.get("reason"))
            if reason in PROBLEM_WAITING_REASONS:
                name = _str(_dict(status).get("name")) or "?"
                message = _str(waiting.get("message"))
                return reason, f"container {name}: {message}" if message else f"container {name}"
    for entry in _list(_dict(pod.get("status")).get("conditions")):
        condition = _dict(entry)
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return _str(condition.get("reason")) or "Unschedulable", _str(condition.get("message"))
    return None


def _was_scheduled_or_seen(pod: Pod) -> bool:
    status = _dict(pod.get("status"))
    return bool(_list(status.get("conditions")) or _str(_dict(pod.get("spec")).get("nodeName")))


def exit_exception(pod: Pod) -> str | None:
    """The first line of Spark's exit exception annotation (the exception's own text; the
    rest is its stack trace)."""
    text = annotation(pod, EXIT_EXCEPTION_ANNOTATION)
    if not text:
        return None
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:EXIT_EXCEPTION_MAX] or None


def disruption(pod: Pod, condition: tuple[str, str | None] | None = None) -> str | None:
    """Why the cluster is taking this pod away, if it is (see ApplicationState.disruption);
    `condition`: its DisruptionTarget condition, when the caller has read it already."""
    condition = condition or disruption_condition(pod)
    if condition is not None:
        return condition[0]
    return "Deleted" if being_deleted(pod) else None


def _said_as_disruption(
    state: ApplicationState, detail: str | None, marked: str | None = None
) -> ApplicationState:
    """A failed driver the cluster took away: the disruption is its cause
    (monitoring/disruption.py), not the bare "Error" of a stopped container. Not when the
    condition came after the container had ended (`marked`, its time): the application
    failed by itself and the cluster only took its remains (a drain, the pod GC), so it is
    no disruption at all, and not retried as infrastructure."""
    if state.state != "failed":
        return state
    if marked_after_end(marked, state.finished_at):
        return replace(state, disruption=None)
    if not explains(state.disruption, state.reason):
        return state
    reason = state.disruption or ""
    return replace(
        state, reason=reason, message=disruption_message(reason, detail, state.driver_pod)
    )


def _failed_from_termination(
    pod: Pod, terminated: Mapping[str, Any], base: dict[str, Any]
) -> ApplicationState:
    return ApplicationState(
        state="failed",
        reason=_str(terminated.get("reason")) or "Error",
        exit_code=_int(terminated.get("exitCode")),
        termination_message=_str(terminated.get("message")),
        finished_at=_str(terminated.get("finishedAt")),
        **base,
    )


def _driver_state(pod: Pod, container: str, base: dict[str, Any]) -> ApplicationState:
    driver_status = _container_status(pod, container)
    terminated = _terminated(driver_status)
    if terminated is not None:
        return _driver_terminated_state(pod, terminated, base)
    ended = _pod_ended_state(pod, base)
    if ended is not None:
        return ended
    running = _dict(_dict(driver_status.get("state")).get("running"))
    if _phase(pod) == "running" and (running or not driver_status):
        return ApplicationState(state="running", started_at=_str(running.get("startedAt")), **base)
    return _not_running_state(pod, driver_status, base)


def _driver_terminated_state(
    pod: Pod, terminated: Mapping[str, Any], base: dict[str, Any]
) -> ApplicationState:
    """The driver container's own end decides, whatever the pod's phase says."""
    if _int(terminated.get("exitCode")) == 0:
        return ApplicationState(
            state="succeeded",
            reason=_str(terminated.get("reason")) or "Completed",
            exit_code=0,
            termination_message=_str(terminated.get("message")),
            finished_at=_str(terminated.get("finishedAt")),
            **base,
        )
    return _failed_from_termination(pod, terminated, base)


def _pod_ended_state(pod: Pod, base: dict[str, Any]) -> ApplicationState | None:
    """A pod that ended with no driver container status; None while it has not ended."""
    phase = _phase(pod)
    status = _dict(pod.get("status"))
    pod_reason, pod_message = _str(status.get("reason")), _str(status.get("message"))
    if phase == "failed":
        # No driver container status: evicted, deadline exceeded, or a wrong container name.
        any_terminated = [
            t for s in _list(status.get("containerStatuses")) if (t := _terminated(_dict(s)))
        ]
        if not pod_reason and any_terminated:
            return _failed_from_termination(pod, any_terminated[0], base)
        return ApplicationState(
            state="failed", reason=pod_reason or "PodFailed", message=pod_message, **base
        )
    if phase == "succeeded":
        return ApplicationState(
            state="succeeded", reason=pod_reason or "Completed", exit_code=0, **base
        )
    return None


def _not_running_state(
    pod: Pod, driver_status: Mapping[str, Any], base: dict[str, Any]
) -> ApplicationState:
    """A driver not running yet: queued by Kueue, stuck (a problem), not scheduled, or
    pending for its container's reason."""
    queue = kueue_queue(pod)
    if queue is not None:
        # Kueue holds the driver until the ClusterQueue has room for the whole application:
        # a wait that ends on its own, not a problem (the scheduler calls it SchedulingGated).
        return ApplicationState(
            state="pending",
            reason=QUEUED_BY_KUEUE,
            message=f"queued in Kueue's LocalQueue {queue} until its ClusterQueue has room for "
            "the driver and every executor",
            **base,
        )
    problem = _pending_problem(pod)
    if problem is not None:
        return ApplicationState(
            state="pending", reason=problem[0], message=problem[1], problem=True, **base
        )
    if not _was_scheduled_or_seen(pod):
        return ApplicationState(state="submitted", **base)
    status = _dict(pod.get("status"))
    waiting = _dict(_dict(driver_status.get("state")).get("waiting"))
    return ApplicationState(
        state="pending",
        reason=_str(waiting.get("reason")) or _str(status.get("reason")),
        message=_str(waiting.get("message")) or _str(status.get("message")),
        **base,
    )


# ---------------------------------------------------------------- executors


def executor_state(pod: Pod, container: str = EXECUTOR_CONTAINER, check_all: bool = True) -> str:
    """Spark's `ExecutorPodsSnapshot.toState`, as a lowercase state name."""
    phase = _phase(pod)
    if being_deleted(pod) and phase not in ("running", "terminating"):
        return "deleted"
    if phase == "pending":
        return "pending"
    if phase == "running":
        statuses = [_dict(s) for s in _list(_dict(pod.get("status")).get("containerStatuses"))]
        restart_never = _dict(pod.get("spec")).get("restartPolicy") == "Never"
        if check_all and restart_never:
            for status in statuses:
                terminated = _terminated(status)
                if terminated is not None and _int(terminated.get("exitCode")) != 0:
                    return "failed"
        terminated = _terminated(_container_status(pod, container))
        if terminated is None:
            return "running"
        return "succeeded" if _int(terminated.get("exitCode")) == 0 else "failed"
    if phase in ("failed", "succeeded", "terminating"):
        return phase
    return "unknown"


def _executor_failure(pod: Pod, container: str) -> ExecutorFailure:
    statuses = [_dict(s) for s in _list(_dict(pod.get("status")).get("containerStatuses"))]
    own = _container_status(pod, container)
    ordered = ([own] if own else []) + statuses
    terminated = next(
        (t for s in ordered if (t := _terminated(s)) and _int(t.get("exitCode")) != 0), None
    ) or next((t for s in ordered if (t := _terminated(s))), {})
    status = _dict(pod.get("status"))
    return ExecutorFailure(
        pod_name=pod_name(pod) or "?",
        executor_id=executor_id(pod),
        reason=_str(terminated.get("reason")) or _str(status.get("reason")),
        exit_code=_int(terminated.get("exitCode")),
        message=_str(terminated.get("message")) or _str(status.get("message")),
    )


def executor_has_ended(pod: Pod) -> bool:
    """An executor pod one of whose containers has terminated."""
    if spark_role(pod) != "executor":
        return False
    statuses = _list(_dict(pod.get("status")).get("containerStatuses"))
    return any(_terminated(_dict(status)) is not None for status in statuses)


def driver_has_ended(pod: Pod) -> bool:
    """A driver pod that succeeded or failed."""
    return spark_role(pod) == "driver" and _phase(pod) in ("succeeded", "failed")


def with_ended_driver(pods: Iterable[Pod], ended_driver: Pod | None) -> tuple[Pod, ...]:
    """`pods`, plus the driver's ended version when no driver is among them: a driver deleted
    right after it ended (its submitter cleaned up before a watcher or poller looked) still
    tells how the application ended, instead of reading as vanished."""
    present = tuple(pods)
    if ended_driver is None or any(spark_role(pod) == "driver" for pod in present):
        return present
    return (*present, ended_driver)


def remember_executors(seen: Mapping[str, Pod], pods: Iterable[Pod]) -> dict[str, Pod]:
    """Every executor pod of the application seen so far, by name: its first version whose
    container ended if one was seen, else its latest.

    Spark deletes its executor pods when its context stops, seconds before the driver ends:
    a summary of the final snapshot alone would count none of the executors that ran. And
    how an executor ended is decided at that first ended version: later ones only add the
    deletion that followed.
    """
    remembered = dict(seen)
    for pod in pods:
        name = pod_name(pod) if isinstance(pod, Mapping) else None
        if not name or spark_role(pod) != "executor":
            continue
        before = remembered.get(name)
        if before is None or not executor_has_ended(before):
            remembered[name] = pod
    return remembered


def _vanished_state(pod: Pod, container: str) -> str:
    """How an executor pod that is gone ended, from its first ended version: exit 0 is
    succeeded; ended while being deleted (Spark deletes its executors when it stops) is
    deleted, as Spark counts it; otherwise failed. Never seen ending: deleted."""
    statuses = [_dict(s) for s in _list(_dict(pod.get("status")).get("containerStatuses"))]
    own = _terminated(_container_status(pod, container))
    terminated = own or next((t for s in statuses if (t := _terminated(s))), None)
    if terminated is None:
        phase = _phase(pod)
        return phase if phase in ("succeeded", "failed") else "deleted"
    if _int(terminated.get("exitCode")) == 0:
        return "succeeded"
    return "deleted" if being_deleted(pod) else "failed"


def summarize_executors(
    pods: Iterable[Pod], container: str = EXECUTOR_CONTAINER, vanished: Iterable[Pod] = ()
) -> ExecutorSummary:
    """Counts by state of the executor pods, plus `vanished` ones (remembered, no longer
    listed), and the failed ones with their reasons."""
    counts: dict[str, int] = {}
    failures: list[ExecutorFailure] = []
    states: list[tuple[Pod, str | None]] = [(p, None) for p in pods]
    states += [(p, _vanished_state(p, container)) for p in vanished if isinstance(p, Mapping)]
    for pod, known in states:
        if not isinstance(pod, Mapping) or spark_role(pod) != "executor":
            continue
        state = known or executor_state(pod, container)
        counts[state] = counts.get(state, 0) + 1
        failure = _executor_failure(pod, container) if state == "failed" else None
        if failure is None and state != "pending":
            oom = _executor_failure(pod, container)
            failure = oom if oom.reason == "OOMKilled" else None
        if failure is not None:
            failures.append(failure)
    if not counts:
        return NO_EXECUTORS
    failures.sort(key=lambda f: f.pod_name)
    return ExecutorSummary(counts=dict(sorted(counts.items())), failures=tuple(failures))


# ---------------------------------------------------------------- the reducer


def reduce_application(
    pods: Iterable[Pod],
    *,
    driver_pod_name: str | None = None,
    driver_container: str = DRIVER_CONTAINER,
    executor_container: str = EXECUTOR_CONTAINER,
    seen_executors: Mapping[str, Pod] | None = None,
) -> ApplicationState:
    """The state of one Spark application from all of its pods (driver and executors).
    `seen_executors` (from `remember_executors`) adds the executors that came and went."""
    pods = [p for p in (pods if isinstance(pods, Iterable) else ()) if isinstance(p, Mapping)]
    present = {pod_name(p) for p in pods}
    vanished = [p for name, p in (seen_executors or {}).items() if name not in present]
    executors = summarize_executors(pods, executor_container, vanished)
    driver = _pick_driver(pods, driver_pod_name)
    if driver is None:
        return ApplicationState(
            state="unknown",
            reason="DriverPodNotFound",
            message=f"driver pod {driver_pod_name or '(spark-role=driver)'} does not exist",
            driver_pod=driver_pod_name,
            executors=executors,
        )
    condition = disruption_condition(driver)
    base = {
        "driver_pod": pod_name(driver),
        "executors": executors,
        "exit_exception": exit_exception(driver),
        "disruption": disruption(driver, condition),
    }
    state = _driver_state(driver, driver_container or DRIVER_CONTAINER, base)
    detail = condition[1] if condition else None
    return _said_as_disruption(state, detail, disruption_marked_at(driver) if condition else None)


def vanished_after_disruption(
    last: ApplicationState | None, now: ApplicationState
) -> ApplicationState:
    """A driver that vanished (`now` is unknown) after the cluster marked it for disruption
    (`last`, the state read before): it was evicted, preempted..., not merely deleted."""
    if now.state != "unknown" or last is None or not explains(last.disruption, now.reason):
        return now
    reason = last.disruption or ""
    return replace(
        now,
        state="failed",
        reason=reason,
        message=disruption_message(reason, None, last.driver_pod) + " and is gone",
        driver_pod=last.driver_pod,
        disruption=reason,
    )


def is_live(pod: Pod) -> bool:
    """A driver pod that still runs its application: not being deleted, not ended."""
    if being_deleted(pod):
        return False
    return not reduce_application([pod], driver_pod_name=pod_name(pod)).terminal
