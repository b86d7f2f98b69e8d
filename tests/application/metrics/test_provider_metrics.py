"""The metrics one look reports, on plain pod dicts: values from the pods' own timestamps,
each reported once per follow."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.follower import Following, FollowSpec, observe
from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
    DURATION,
    EXECUTOR_FAILURES,
    NO_METRICS,
    PENDING,
    QUEUE_WAIT,
    STORE_APPLICATIONS,
    TIME_TO_RUNNING,
    Measurement,
    look_metrics,
    may_report,
    send,
    store_gauges,
    task_tags,
)
from testenv.harness.pod_builders import APP, SCHEDULED, pod, running, terminated, waiting

SPEC = FollowSpec(APP, "ns", driver_pod_name="d", start_time=1000.0)
EXECUTOR = "spark-kubernetes-executor"


def follow(looks: list[list[dict[str, Any]]]) -> list[tuple[Measurement, ...]]:
    following = Following(SPEC)
    reported = []
    for pods in looks:
        step = observe(following, pods)
        measured = look_metrics(following.state, step)
        # The trigger derives only the looks `may_report` lets through: none may be lost.
        assert measured == () or may_report(following.state, step), measured
        reported.append(measured)
        following = step.following
    return reported


def names(measurements: tuple[Measurement, ...]) -> list[str]:
    return [m.name for m in measurements]


def test_a_run_reports_pending_reasons_time_to_running_and_duration_from_pod_timestamps():
    looks = [
        [
            pod(
                "d",
                phase="Pending",
                conditions=SCHEDULED,
                containers=[waiting("ContainerCreating")],
            )
        ],
        [
            pod(
                "d",
                phase="Pending",
                conditions=SCHEDULED,
                containers=[waiting("ContainerCreating")],
            )
        ],
        [pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])],
        [pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])],
        [pod("d", phase="Succeeded", containers=[terminated(0, "Completed")])],
    ]
    reported = follow(looks)
    assert reported[0] == (Measurement("incr", PENDING, 1, {"reason": "ContainerCreating"}),)
    assert reported[1] == ()  # the same (state, reason): not counted again
    # creationTimestamp 00:00:00, running.startedAt 00:00:05, finishedAt 00:01:00
    assert reported[2] == (Measurement("timing", TIME_TO_RUNNING, 5.0, {}),)
    assert reported[3] == ()
    assert reported[4] == (Measurement("timing", DURATION, 60.0, {"state": "succeeded"}),)


def test_looks_that_change_nothing_are_not_handed_to_the_sink():
    creating = pod("d", phase="Pending", conditions=SCHEDULED, containers=[waiting("Pulling")])
    live = pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])
    done = pod("d", phase="Succeeded", containers=[terminated(0, "Completed")])
    following = Following(SPEC)
    passed = []
    for pods in ([creating], [creating], [live], [live], [live], [done]):
        step = observe(following, pods)
        passed.append(may_report(following.state, step))
        following = step.following
    assert passed == [True, False, True, False, False, True]


def test_a_driver_that_ended_before_any_look_saw_it_running_is_still_timed():
    ended = terminated(1, "Error")
    ended["state"]["terminated"]["startedAt"] = "2026-01-01T00:00:07Z"
    reported = follow([[pod("d", phase="Failed", containers=[ended])]])
    assert reported[0] == (
        Measurement("timing", TIME_TO_RUNNING, 7.0, {}),
        Measurement("timing", DURATION, 60.0, {"state": "failed"}),
    )


def test_a_kueue_driver_reports_its_gated_wait_from_creation_to_start_time():
    gate = {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}
    queued = pod("d", phase="Pending")
    queued["spec"].update(gate)
    queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "lq"
    admitted = pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])
    admitted["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "lq"
    admitted["status"]["startTime"] = "2026-01-01T00:00:03Z"
    reported = follow([[queued], [admitted]])
    assert reported[0] == (Measurement("incr", PENDING, 1, {"reason": "QueuedByKueue"}),)
    assert reported[1] == (
        Measurement("timing", TIME_TO_RUNNING, 5.0, {}),
        Measurement("timing", QUEUE_WAIT, 3.0, {}),
    )


def test_a_driver_no_queue_holds_reports_no_queue_wait_though_it_has_a_start_time():
    started = pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])
    started["status"]["startTime"] = "2026-01-01T00:00:03Z"
    assert follow([[started]])[0] == (Measurement("timing", TIME_TO_RUNNING, 5.0, {}),)


def test_each_failed_executor_counts_once_by_its_reason():
    driver = pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])

    def executor(name: str, *containers: dict[str, Any]) -> dict[str, Any]:
        return pod(
            name, role="executor", exec_id=name[-1], phase="Failed", containers=list(containers)
        )

    oom = executor("e1", terminated(137, "OOMKilled", name=EXECUTOR))
    error = executor("e2", terminated(1, "Error", name=EXECUTOR))
    reported = follow([[driver, oom], [driver, oom], [driver, oom, error]])
    failures = [(m.name, m.tags) for r in reported for m in r if m.name == EXECUTOR_FAILURES]
    assert failures == [
        (EXECUTOR_FAILURES, {"reason": "OOMKilled"}),
        (EXECUTOR_FAILURES, {"reason": "Error"}),
    ]


def test_store_gauges_send_every_state_with_zeros_and_skip_unseen_applications():
    gauges = {
        m.tags["state"]: m.value for m in store_gauges(["running", "running", None, "pending"])
    }
    assert gauges == {
        "submitted": 0,
        "pending": 1,
        "running": 2,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
    }
    assert {m.name for m in store_gauges([])} == {STORE_APPLICATIONS}


class Recorder:
    enabled = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, float, dict[str, str]]] = []

    def incr(self, name: str, count: int, tags: Any) -> None:
        self.sent.append(("incr", name, count, dict(tags)))

    def gauge(self, name: str, value: float, tags: Any) -> None:
        self.sent.append(("gauge", name, value, dict(tags)))

    def timing(self, name: str, seconds: float, tags: Any) -> None:
        self.sent.append(("timing", name, seconds, dict(tags)))


def test_send_adds_the_application_tags_and_missing_ids_are_left_out():
    sink = Recorder()
    tags = task_tags("ns", "etl", None)
    assert tags == {"namespace": "ns", "dag_id": "etl"}
    send(sink, [Measurement("incr", PENDING, 1, {"reason": "Unschedulable"})], tags)
    send(sink, [Measurement("timing", DURATION, 2.5, {})], tags)
    assert sink.sent == [
        ("incr", PENDING, 1, {"namespace": "ns", "dag_id": "etl", "reason": "Unschedulable"}),
        ("timing", DURATION, 2.5, {"namespace": "ns", "dag_id": "etl"}),
    ]
    assert NO_METRICS.enabled is False


def test_a_tasks_shared_tags_are_one_read_only_mapping_hashed_by_identity() -> None:
    from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
        SharedTags,
        shared_task_tags,
    )

    tags = shared_task_tags("team-a", "etl", "spark")
    assert tags is shared_task_tags("team-a", "etl", "spark")
    assert tags == {"namespace": "team-a", "dag_id": "etl", "task_id": "spark"}
    other = SharedTags(dict(tags))
    assert other == tags and hash(other) != hash(tags)  # a key per object, not per content
    assert {tags: 1}.get(tags) == 1
    with pytest.raises(TypeError):
        tags["namespace"] = "x"  # type: ignore[index]
