"""A pod's status from what the runtime knows about its containers (pure).

The kubelet's rules for `restartPolicy: Never`, the only policy the process runtime runs:
Pending while any init container has not succeeded or any container has not started;
Running while one runs; Succeeded when all exited 0, Failed when one did not.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from testenv.nodeagent.logs import LogEntry, message_from_tail

CONTAINER_ID_SCHEME = "sparkk8s-process"


@dataclass(frozen=True)
class Waiting:
    reason: str = "ContainerCreating"
    message: str | None = None


@dataclass(frozen=True)
class Running:
    started_at: str


@dataclass(frozen=True)
class Terminated:
    exit_code: int
    reason: str
    started_at: str
    finished_at: str
    message: str | None = None


ContainerState = Waiting | Running | Terminated


@dataclass(frozen=True)
class PodView:
    """What the agent knows about a pod it runs, besides the pod object."""

    pod_ip: str
    host_ip: str
    start_time: str
    init_containers: Mapping[str, ContainerState] = field(default_factory=dict)
    containers: Mapping[str, ContainerState] = field(default_factory=dict)
    container_ids: Mapping[str, str] = field(default_factory=dict)


def exit_code(returncode: int) -> int:
    """A container runtime's exit code: 128 + the signal for a process killed by one."""
    return 128 - returncode if returncode < 0 else returncode


def terminated_reason(code: int, oom_killed: bool) -> str:
    if oom_killed:
        return "OOMKilled"
    return "Completed" if code == 0 else "Error"


def termination_message(
    container: Mapping[str, Any], code: int, file_text: str, log: list[LogEntry]
) -> str | None:
    """The file at terminationMessagePath first; with `FallbackToLogsOnError`, a failed
    container with an empty file gets its log's tail."""
    text = file_text.strip()
    if text:
        return text[-4096:]
    if code != 0 and container.get("terminationMessagePolicy") == "FallbackToLogsOnError":
        return message_from_tail(log) or None
    return None


def _state_document(state: ContainerState) -> dict[str, Any]:
    if isinstance(state, Waiting):
        waiting: dict[str, Any] = {"reason": state.reason}
        if state.message:
            waiting["message"] = state.message
        return {"waiting": waiting}
    if isinstance(state, Running):
        return {"running": {"startedAt": state.started_at}}
    terminated: dict[str, Any] = {
        "exitCode": state.exit_code,
        "reason": state.reason,
        "startedAt": state.started_at,
        "finishedAt": state.finished_at,
    }
    if state.exit_code > 128 and state.exit_code - 128 in signal.valid_signals():
        terminated["signal"] = state.exit_code - 128
    if state.message:
        terminated["message"] = state.message
    return {"terminated": terminated}


def _container_status(
    container: Mapping[str, Any], state: ContainerState, container_id: str | None, init: bool
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": f"{CONTAINER_ID_SCHEME}-image://{container.get('image', '')}",
        "ready": (isinstance(state, Running) and not init)
        or (init and isinstance(state, Terminated) and state.exit_code == 0),
        "restartCount": 0,
        "started": isinstance(state, Running),
        "state": _state_document(state),
    }
    if container_id:
        document["containerID"] = f"{CONTAINER_ID_SCHEME}://{container_id}"
    return document


def phase(view: PodView, init_names: list[str], names: list[str]) -> str:
    init_states = [view.init_containers.get(n, Waiting()) for n in init_names]
    states = [view.containers.get(n, Waiting()) for n in names]
    if any(isinstance(s, Terminated) and s.exit_code != 0 for s in init_states):
        return "Failed"
    if any(isinstance(s, Running) for s in states):
        return "Running"
    if states and all(isinstance(s, Terminated) for s in states):
        failed = any(isinstance(s, Terminated) and s.exit_code != 0 for s in states)
        return "Failed" if failed else "Succeeded"
    if any(isinstance(s, Terminated) for s in states):
        return "Running"  # some ended, others still starting
    return "Pending"


def _condition(
    kind: str, ok: bool, now: str, previous: Mapping[str, Any], reason: str | None = None
) -> dict[str, Any]:
    """A condition whose transition time moves only when its status changes."""
    status = "True" if ok else "False"
    before = previous.get(kind) or {}
    since = before.get("lastTransitionTime") if before.get("status") == status else None
    condition: dict[str, Any] = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": since or now,
    }
    if reason and not ok:
        condition["reason"] = reason
    return condition


def pod_status(pod: Mapping[str, Any], view: PodView, now: str) -> dict[str, Any]:
    """The status document the agent patches; conditions merge by type on the server, so
    the scheduler's PodScheduled stays as it is."""
    spec = pod.get("spec") or {}
    init_specs = list(spec.get("initContainers") or [])
    specs = list(spec.get("containers") or [])
    init_names = [c["name"] for c in init_specs]
    names = [c["name"] for c in specs]
    pod_phase = phase(view, init_names, names)
    initialized = all(
        isinstance(s := view.init_containers.get(n, Waiting()), Terminated) and s.exit_code == 0
        for n in init_names
    )
    all_running = bool(names) and all(isinstance(view.containers.get(n), Running) for n in names)
    previous = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or [] if c}
    ids = view.container_ids
    status: dict[str, Any] = {
        "phase": pod_phase,
        "hostIP": view.host_ip,
        "hostIPs": [{"ip": view.host_ip}],
        "podIP": view.pod_ip,
        "podIPs": [{"ip": view.pod_ip}],
        "startTime": view.start_time,
        "conditions": [
            _condition("PodReadyToStartContainers", True, now, previous),
            _condition("Initialized", initialized, now, previous, "ContainersNotInitialized"),
            _condition("ContainersReady", all_running, now, previous, "ContainersNotReady"),
            _condition("Ready", all_running, now, previous, "ContainersNotReady"),
        ],
        "containerStatuses": [
            _container_status(
                c, view.containers.get(c["name"], Waiting()), ids.get(c["name"]), False
            )
            for c in specs
        ],
    }
    if init_specs:
        status["initContainerStatuses"] = [
            _container_status(
                c, view.init_containers.get(c["name"], Waiting("PodInitializing")),
                ids.get(c["name"]), True,
            )
            for c in init_specs
        ]  # fmt: skip
        if not initialized:
            status["containerStatuses"] = [
                _container_status(c, Waiting("PodInitializing"), None, False) for c in specs
            ]
    return status
