"""What an application's pods asked for, over the time each one ran: the cost per task.

Each pod is read from its own fields, never from the clock of whoever looks, unless the pod
says nothing (it is gone, or still running when the following ends):

- requests: the sum over `spec.containers` of `resources.requests`: `cpu` in cores, `memory`
  in GiB (2**30 bytes), and every extended resource named `<vendor>/gpu` (`nvidia.com/gpu`,
  `amd.com/gpu`) as GPUs. The API server defaults a missing request to its limit, so a GPU
  that Spark sets as a limit counts. Init containers are left out: they run before the
  interval below starts.
- running interval: from the earliest container start (`state.running.startedAt`, or the
  `startedAt` of `state.terminated`) to the latest `finishedAt` once every container has
  terminated. A pod gone before that ends at its `deletionTimestamp`, or at the look that
  found it gone when that came first; a pod still running when the following ends (the
  driver's end, a timeout) counts up to that moment.
- pending: from `metadata.creationTimestamp` to that start (scheduling, a Kueue gate,
  image pull, container creation); a pod that never started is pending until its end.

core-seconds = cores x running seconds; GiB-seconds and GPU-seconds alike. Kubernetes
writes these timestamps to the second, so each pod's figures are exact to one second.

Between two looks the follower keeps a running total (`Cost`) and the pods of its last look
(the very objects the store holds: no copy). A pod is added to the total once, when it
leaves (or when the following ends), from its newest version seen. The peak is the most
executor pods running at once by their own intervals, among the pods one look knows (those
present and those that just left).

Pure: pods and `now` in, a new `Cost` out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.monitoring.snapshot import is_newer
from airflow_provider_sparkk8s.objects import (
    metadata,
    name,
    quantity,
    resource_version,
    spark_role,
    uid,
)
from airflow_provider_sparkk8s.records import record

GIB = float(2**30)


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def epoch(value: Any) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def is_gpu(resource: str) -> bool:
    return resource.endswith("/gpu")


@record(slots=True)
class PodCost:
    """One pod: what it requested, and its interval by its own timestamps."""

    role: str | None
    cores: float
    gib: float
    gpus: float
    created: float | None
    started: float | None
    ended: float | None

    @property
    def running_seconds(self) -> float:
        if self.started is None or self.ended is None:
            return 0.0
        return max(self.ended - self.started, 0.0)

    @property
    def pending_seconds(self) -> float:
        until = self.started if self.started is not None else self.ended
        if self.created is None or until is None:
            return 0.0
        return max(until - self.created, 0.0)


def requests_of(pod: Pod) -> tuple[float, float, float]:
    """(cores, GiB, GPUs) the pod's containers request."""
    cores = gib = gpus = 0.0
    for container in _list(_dict(pod.get("spec")).get("containers")):
        requests = _dict(_dict(_dict(container).get("resources")).get("requests"))
        cores += quantity(requests.get("cpu", 0))
        gib += quantity(requests.get("memory", 0)) / GIB
        gpus += sum(quantity(v) for k, v in requests.items() if is_gpu(str(k)))
    return cores, gib, gpus


def pod_cost(pod: Pod, gone_at: float | None) -> PodCost:
    """The pod's figures; `gone_at` ends an interval the pod's own timestamps leave open."""
    starts: list[float] = []
    finishes: list[float] = []
    statuses = [_dict(s) for s in _list(_dict(pod.get("status")).get("containerStatuses"))]
    for status in statuses:
        state = _dict(status.get("state"))
        running, terminated = _dict(state.get("running")), _dict(state.get("terminated"))
        start = epoch(running.get("startedAt") or terminated.get("startedAt"))
        if start is not None:
            starts.append(start)
        finish = epoch(terminated.get("finishedAt"))
        if finish is not None:
            finishes.append(finish)
    if statuses and len(finishes) == len(statuses):
        ended: float | None = max(finishes)
    else:
        deleted = epoch(metadata(pod).get("deletionTimestamp"))
        ends = [t for t in (deleted, gone_at) if t is not None]
        ended = min(ends) if ends else None
    cores, gib, gpus = requests_of(pod)
    created = epoch(metadata(pod).get("creationTimestamp"))
    return PodCost(spark_role(pod), cores, gib, gpus, created, min(starts, default=None), ended)


def peak_running(pods: Iterable[PodCost]) -> int:
    """The most of `pods` running at one moment: a sweep over their intervals, an end
    before a start at the same second (an interval holds its start, not its end)."""
    changes: list[tuple[float, int]] = []
    for pod in pods:
        if pod.started is not None:
            changes.append((pod.started, 1))
            if pod.ended is not None:
                changes.append((max(pod.ended, pod.started), -1))
    running = peak = 0
    for _, change in sorted(changes):
        running += change
        peak = max(peak, running)
    return peak


@record(slots=True)
class RoleCost:
    """The running total of one role's pods (the driver, or the executors)."""

    core_seconds: float = 0.0
    gib_seconds: float = 0.0
    gpu_seconds: float = 0.0
    pending_seconds: float = 0.0
    pods: int = 0

    def plus(self, pod: PodCost) -> RoleCost:
        seconds = pod.running_seconds
        return RoleCost(
            self.core_seconds + pod.cores * seconds,
            self.gib_seconds + pod.gib * seconds,
            self.gpu_seconds + pod.gpus * seconds,
            self.pending_seconds + pod.pending_seconds,
            self.pods + 1,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "core_seconds": round(self.core_seconds, 3),
            "gib_seconds": round(self.gib_seconds, 3),
            "gpu_seconds": round(self.gpu_seconds, 3),
            "pending_seconds": round(self.pending_seconds, 3),
            "pods": self.pods,
        }


@record(slots=True)
class Cost:
    """The application's running total: pods that have left (or all, once it has ended)."""

    driver: RoleCost = RoleCost()
    executors: RoleCost = RoleCost()
    peak_executors: int = 0

    def plus(self, pods: Iterable[PodCost], peak: int) -> Cost:
        driver, executors = self.driver, self.executors
        for pod in pods:
            if pod.role == "executor":
                executors = executors.plus(pod)
            else:
                driver = driver.plus(pod)
        return Cost(driver, executors, max(self.peak_executors, peak))

    def to_dict(self) -> dict[str, Any]:
        """The XCom's `cost`: totals over every pod, the driver's pending time, the peak,
        and each role's own figures (executors' pending time is summed over their pods)."""
        d, e = self.driver, self.executors
        return {
            "core_seconds": round(d.core_seconds + e.core_seconds, 3),
            "gib_seconds": round(d.gib_seconds + e.gib_seconds, 3),
            "gpu_seconds": round(d.gpu_seconds + e.gpu_seconds, 3),
            "pending_seconds": round(d.pending_seconds, 3),
            "peak_executors": self.peak_executors,
            "executor_pods": e.pods,
            "driver": d.to_dict(),
            "executors": e.to_dict(),
        }


NO_COST = Cost()  # shared: an application nothing has left yet holds no total of its own


def _key(pod: Pod) -> str:
    return uid(pod) or name(pod) or ""


def latest_timestamp(pods: Iterable[Pod]) -> float | None:
    """The latest moment any of `pods` records: the end of an interval when no clock is
    given (a resume reports from a list alone)."""
    moments: list[float] = []
    for pod in pods:
        cost = pod_cost(pod, None)
        moments += [t for t in (cost.created, cost.started, cost.ended) if t is not None]
    return max(moments, default=None)


def account(
    cost: Cost,
    live: Sequence[Pod],
    present: Sequence[Pod],
    history: Iterable[Pod] = (),
    now: float | None = None,
    *,
    final: bool = False,
) -> Cost:
    """`cost` plus the pods that left since the last look, and every pod once `final`.

    `live`: the pods of the last look; `present`: this look's; `history`: versions seen in
    between (ended executors, an ended driver) that `present` may no longer show. `now`: the
    look's time (None: the latest moment the pods record)."""
    here = {_key(pod) for pod in present}
    gone: dict[str, Pod] = {}
    for pod in (*live, *history):
        key = _key(pod)
        held = gone.get(key)
        newer = held is None or is_newer(resource_version(pod), resource_version(held))
        if key not in here and newer:
            gone[key] = pod
    executors = [p for p in (*present, *gone.values()) if spark_role(p) == "executor"]
    # Steady state (nothing left, no more executors than the peak): no timestamp is read.
    if not gone and not final and len(executors) <= cost.peak_executors:
        return cost
    at = now if now is not None else latest_timestamp((*present, *gone.values()))
    left = [pod_cost(pod, at) for pod in gone.values()]
    # A pod still listed runs from its start on, whatever this clock says (it may lag the
    # kubelet's): its interval stays open for the peak.
    staying = [pod_cost(pod, None) for pod in present if spark_role(pod) == "executor"]
    peak = peak_running(p for p in (*left, *staying) if p.role == "executor")
    closed = [*left, *(pod_cost(pod, at) for pod in present)] if final else left
    if not closed and peak <= cost.peak_executors:
        return cost
    return cost.plus(closed, peak)


def cost_line(cost: Mapping[str, Any]) -> str:
    """The task log's one line."""
    return (
        f"cost: {cost.get('core_seconds', 0):g} core-seconds, "
        f"{cost.get('gib_seconds', 0):g} GiB-seconds, {cost.get('gpu_seconds', 0):g} "
        f"GPU-seconds; peak {cost.get('peak_executors', 0)} executors "
        f"({cost.get('executor_pods', 0)} executor pods); driver pending "
        f"{cost.get('pending_seconds', 0):g} s"
    )
