"""Pod status from container states (testenv/nodeagent/status.py)."""

from __future__ import annotations

import datetime

from testenv.nodeagent.logs import LogEntry
from testenv.nodeagent.status import (
    PodView,
    Running,
    Terminated,
    Waiting,
    exit_code,
    pod_status,
    terminated_reason,
    termination_message,
)

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z"


def pod(containers=("main",), init=(), conditions=None):
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": n, "image": "sparkk8s/shell:1"} for n in containers],
            "initContainers": [{"name": n, "image": "sparkk8s/shell:1"} for n in init],
        },
        "status": {"conditions": conditions or []},
    }


def view(containers, init=None):
    return PodView("127.1.1.10", "127.1.1.1", T0, init or {}, containers, {"main": "uid-main-42"})


def conditions(status):
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_creating_then_running_then_succeeded():
    creating = pod_status(pod(), view({"main": Waiting()}), T0)
    assert creating["phase"] == "Pending"
    assert creating["podIP"] == "127.1.1.10" and creating["hostIP"] == "127.1.1.1"
    assert creating["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert conditions(creating)["Ready"] == "False"

    running = pod_status(pod(), view({"main": Running(T1)}), T1)
    assert running["phase"] == "Running"
    assert running["containerStatuses"][0]["state"] == {"running": {"startedAt": T1}}
    assert running["containerStatuses"][0]["ready"] is True
    assert running["containerStatuses"][0]["containerID"] == "sparkk8s-process://uid-main-42"
    assert conditions(running) == {
        "PodReadyToStartContainers": "True", "Initialized": "True",
        "ContainersReady": "True", "Ready": "True",
    }  # fmt: skip

    done = pod_status(pod(), view({"main": Terminated(0, "Completed", T1, T2)}), T2)
    assert done["phase"] == "Succeeded"
    assert done["containerStatuses"][0]["state"]["terminated"] == {
        "exitCode": 0, "reason": "Completed", "startedAt": T1, "finishedAt": T2,
    }  # fmt: skip


def test_a_failed_container_fails_the_pod_with_its_signal_and_message():
    state = Terminated(137, "OOMKilled", T1, T2, "killed")
    status = pod_status(pod(), view({"main": state}), T2)
    assert status["phase"] == "Failed"
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["signal"] == 9 and terminated["message"] == "killed"


def test_one_container_still_running_keeps_the_pod_running():
    states = {"main": Terminated(1, "Error", T1, T2), "side": Running(T1)}
    assert pod_status(pod(("main", "side")), view(states), T2)["phase"] == "Running"


def test_init_containers_gate_the_others():
    waiting = pod_status(pod(init=("setup",)), view({}, {"setup": Running(T1)}), T1)
    assert waiting["phase"] == "Pending"
    assert conditions(waiting)["Initialized"] == "False"
    assert waiting["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    failed = pod_status(
        pod(init=("setup",)), view({}, {"setup": Terminated(2, "Error", T1, T2)}), T2
    )
    assert failed["phase"] == "Failed"
    assert failed["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 2


def test_a_condition_keeps_its_transition_time_while_its_status_holds():
    earlier = [{"type": "Ready", "status": "True", "lastTransitionTime": T0}]
    status = pod_status(pod(conditions=earlier), view({"main": Running(T1)}), T2)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == T0
    changed = pod_status(
        pod(conditions=earlier), view({"main": Terminated(0, "Completed", T1, T2)}), T2
    )
    ready = next(c for c in changed["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == T2 and ready["reason"] == "ContainersNotReady"


def test_exit_codes_and_reasons_as_a_container_runtime_reports_them():
    assert exit_code(-9) == 137 and exit_code(-15) == 143 and exit_code(3) == 3
    assert terminated_reason(0, False) == "Completed"
    assert terminated_reason(1, False) == "Error"
    assert terminated_reason(137, True) == "OOMKilled"


def test_the_message_comes_from_the_file_else_the_log_tail_when_asked():
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    log = [LogEntry(now, "stderr", f"line {i}") for i in range(100)]
    fallback = {"terminationMessagePolicy": "FallbackToLogsOnError"}
    assert termination_message(fallback, 1, "from the file\n", log) == "from the file"
    tail = termination_message(fallback, 1, "", log)
    assert tail is not None and tail.endswith("line 99") and "line 19\n" not in tail
    assert tail.splitlines()[0] == "line 20"
    assert termination_message(fallback, 0, "", log) is None
    assert termination_message({}, 1, "", log) is None
