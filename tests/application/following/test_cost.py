"""The cost per task on plain pod dicts: each pod's requests and interval from its own
timestamps, the running total across looks (pods that come and go, are replaced, vanish),
the peak, and what the follower reports in its final event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.cost import (
    NO_COST,
    account,
    cost_line,
    peak_running,
    pod_cost,
    requests_of,
)
from airflow_provider_sparkk8s.application.following.follower import (
    Following,
    FollowSpec,
    observe,
    tick,
)
from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.resume import Finished, decide_resume
from airflow_provider_sparkk8s.monitoring.snapshot import slim_pod
from testenv.harness.pod_builders import APP

T0 = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
EPOCH0 = T0.timestamp()


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def spark_pod(
    name: str,
    role: str = "executor",
    *,
    created: float = 0,
    started: float | None = None,
    finished: float | None = None,
    deleted: float | None = None,
    requests: dict[str, str] | None = None,
    rv: int = 1,
) -> dict[str, Any]:
    """A pod of APP whose container ran from `started` to `finished` (seconds after T0)."""
    state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
    phase = "Pending"
    if started is not None and finished is None:
        state, phase = {"running": {"startedAt": at(started)}}, "Running"
    elif finished is not None:
        terminated = {"exitCode": 0, "reason": "Completed", "finishedAt": at(finished)}
        if started is not None:
            terminated["startedAt"] = at(started)
        state, phase = {"terminated": terminated}, "Succeeded"
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": str(rv),
        "creationTimestamp": at(created),
        "labels": {"spark-app-selector": APP, "spark-role": role},
    }
    if deleted is not None:
        metadata["deletionTimestamp"] = at(deleted)
    container = "spark-kubernetes-driver" if role == "driver" else "spark-kubernetes-executor"
    resources = {"requests": requests or {"cpu": "1", "memory": "1Gi"}}
    return {
        "metadata": metadata,
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": container, "resources": resources}],
        },
        "status": {"phase": phase, "containerStatuses": [{"name": container, "state": state}]},
    }


def test_requests_add_up_over_containers_in_cores_gib_and_gpus() -> None:
    pod = spark_pod("e", requests={"cpu": "500m", "memory": "1536Mi", "nvidia.com/gpu": "1"})
    pod["spec"]["containers"].append(
        {"name": "side", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}
    )
    pod["spec"]["containers"].append({"name": "bare"})
    assert requests_of(pod) == (1.5, 2.0, 1.0)


def test_a_pod_runs_from_its_container_start_to_its_finish_and_is_pending_before() -> None:
    cost = pod_cost(spark_pod("e", created=0, started=12, finished=112), gone_at=None)
    assert (cost.pending_seconds, cost.running_seconds) == (12.0, 100.0)
    assert (cost.cores, cost.gib, cost.gpus) == (1.0, 1.0, 0.0)


def test_an_open_interval_ends_at_the_deletion_or_when_it_was_found_gone_whichever_first() -> None:
    running = spark_pod("e", started=10)
    assert pod_cost(running, gone_at=EPOCH0 + 70).running_seconds == 60.0
    being_deleted = spark_pod("e", started=10, deleted=40)
    assert pod_cost(being_deleted, gone_at=EPOCH0 + 70).running_seconds == 30.0
    assert pod_cost(being_deleted, gone_at=EPOCH0 + 25).running_seconds == 15.0
    assert pod_cost(running, gone_at=None).running_seconds == 0.0  # no end known


def test_a_pod_that_never_started_costs_nothing_and_was_pending_until_it_went() -> None:
    cost = pod_cost(spark_pod("e", created=5), gone_at=EPOCH0 + 65)
    assert (cost.running_seconds, cost.pending_seconds) == (0.0, 60.0)


def test_the_peak_counts_intervals_that_overlap_and_an_end_before_a_start_at_one_second() -> None:
    def interval(start: float, end: float | None) -> Any:
        return pod_cost(spark_pod("e", started=start, finished=end), None)

    assert peak_running([]) == 0
    assert peak_running([interval(0, 10), interval(10, 20)]) == 1  # a replacement
    assert peak_running([interval(0, 10), interval(5, 20), interval(6, None)]) == 3
    assert peak_running([interval(0, 10), interval(5, 8), interval(9, 20)]) == 2


def test_executors_that_come_and_go_are_each_counted_once_from_their_own_timestamps() -> None:
    """Dynamic allocation: exec-1 and exec-2 run, exec-1 ends and is deleted between two
    looks (its ended version arrives as history), exec-2 is deleted while running and is
    gone at the next look (its deletionTimestamp ends it), exec-3 comes later, and the
    driver ends with exec-3 still listed as ended."""
    small = {"cpu": "2", "memory": "3Gi", "amd.com/gpu": "1"}
    driver = spark_pod("d", "driver", created=0, started=4, rv=1)
    e1 = spark_pod("e1", created=5, started=7, rv=2)
    e2 = spark_pod("e2", created=5, started=9, requests=small, rv=3)
    looks: list[tuple[list[dict[str, Any]], list[dict[str, Any]], float]] = [
        ([driver], [], 6),
        ([driver, e1, e2], [], 10),
        # e1 ended at 47 and is gone; its ended version came between the looks.
        ([driver, spark_pod("e2", created=5, started=9, deleted=50, requests=small, rv=5)],
         [spark_pod("e1", created=5, started=7, finished=47, rv=4)], 48),
        ([driver], [], 60),  # e2 gone, never seen ended: its deletionTimestamp (50) ends it
        ([driver, spark_pod("e3", created=61, started=63, rv=7)], [], 64),
    ]  # fmt: skip
    cost = NO_COST
    live: tuple[dict[str, Any], ...] = ()
    for present, history, now in looks:
        cost = account(cost, live, present, history, EPOCH0 + now)
        live = tuple(present)
    ended = [
        spark_pod("d", "driver", created=0, started=4, finished=100, rv=9),
        spark_pod("e3", created=61, started=63, finished=93, rv=8),
    ]
    cost = account(cost, live, ended, (), EPOCH0 + 101, final=True)
    report = cost.to_dict()
    # driver 96 s x 1; e1 40 s x 1; e2 41 s x 2 cores (3 GiB, 1 GPU); e3 30 s x 1
    assert report["driver"] == {
        "core_seconds": 96.0, "gib_seconds": 96.0, "gpu_seconds": 0.0,
        "pending_seconds": 4.0, "pods": 1,
    }  # fmt: skip
    assert report["executors"] == {
        "core_seconds": 40.0 + 82.0 + 30.0, "gib_seconds": 40.0 + 123.0 + 30.0,
        "gpu_seconds": 41.0, "pending_seconds": 2.0 + 4.0 + 2.0, "pods": 3,
    }  # fmt: skip
    assert report["core_seconds"] == 96.0 + 152.0
    assert report["gib_seconds"] == 96.0 + 193.0
    assert report["gpu_seconds"] == 41.0
    assert report["pending_seconds"] == 4.0  # the driver's
    assert (report["peak_executors"], report["executor_pods"]) == (2, 3)


def test_a_pod_in_history_and_then_gone_from_the_last_look_is_counted_once() -> None:
    e1_running = spark_pod("e1", started=0, rv=1)
    e1_ended = spark_pod("e1", started=0, finished=10, rv=2)
    cost = account(NO_COST, (), [e1_running], (), EPOCH0 + 1)
    cost = account(cost, [e1_running], [e1_ended], [e1_ended], EPOCH0 + 11)  # still listed
    assert cost.executors.pods == 0
    cost = account(cost, [e1_ended], [], [], EPOCH0 + 12)  # now gone
    cost = account(cost, [], [], [], EPOCH0 + 13)
    assert (cost.executors.pods, cost.executors.core_seconds) == (1, 10.0)


def test_the_newest_version_of_a_pod_that_left_is_the_one_counted() -> None:
    older = spark_pod("e1", started=0, rv=3)
    newer = spark_pod("e1", started=0, finished=20, rv=4)
    cost = account(NO_COST, [newer], [], [older], EPOCH0 + 90)
    assert cost.executors.core_seconds == 20.0


def test_steady_looks_keep_the_same_total_and_read_no_timestamp() -> None:
    driver = spark_pod("d", "driver", started=1)
    assert account(NO_COST, [driver], [driver], (), EPOCH0 + 5) is NO_COST
    executor = spark_pod("e1", started=2)
    once = account(NO_COST, [driver], [driver, executor], (), EPOCH0 + 5)
    assert once.peak_executors == 1
    assert account(once, [driver, executor], [driver, executor], (), EPOCH0 + 6) is once


def test_without_a_clock_an_open_interval_ends_at_the_latest_moment_the_pods_record() -> None:
    pods = [spark_pod("d", "driver", started=0, finished=50), spark_pod("e1", started=10)]
    cost = account(NO_COST, (), pods, final=True)
    assert (cost.driver.core_seconds, cost.executors.core_seconds) == (50.0, 40.0)


def test_the_follower_reports_the_cost_in_its_final_event_and_a_timeout_closes_at_now() -> None:
    spec = FollowSpec(APP, "ns", driver_pod_name="d", start_time=EPOCH0, run_timeout=30)
    following = Following(spec)
    driver = spark_pod("d", "driver", created=0, started=2)
    executor = spark_pod("e1", created=3, started=5)
    for now in (3, 6):
        following = observe(following, [driver, executor], (), EPOCH0 + now).following
    step = tick(following, EPOCH0 + 31)
    assert step.final is not None and step.final["status"] == "timeout"
    assert step.final["cost"]["core_seconds"] == 29.0 + 26.0
    assert step.following.live == ()

    done = Following(spec)
    for pods, now in (([driver], 3), ([driver, executor], 6)):
        done = observe(done, pods, (), EPOCH0 + now).following
    finished = spark_pod("d", "driver", created=0, started=2, finished=22, rv=2)
    final = observe(done, [finished], [], EPOCH0 + 23)
    assert final.final is not None
    # the executor left unseen: it counts up to the look that found it gone
    assert final.final["cost"]["executors"]["core_seconds"] == 18.0
    assert final.final["cost"]["driver"]["core_seconds"] == 20.0
    later = observe(final.following, [], [], EPOCH0 + 99)
    assert later.following.cost is final.following.cost  # reported once, then kept


def test_a_resume_without_the_event_reports_no_cost() -> None:
    """The executors that left before the resume looked are unknown: no total rather than a
    wrong one (a gone driver with two executors still running would count 0 core-seconds)."""
    app = TrackedApplication(APP, "ns", "d", "spark-kubernetes-driver", at(0))
    driver = spark_pod("d", "driver", created=0, started=3, finished=33)
    decision = decide_resume(app, [driver], ())
    assert isinstance(decision, Finished)
    assert "cost" not in decision.event
    adopted = decide_resume(None, (), [driver])
    assert isinstance(adopted, Finished) and "cost" not in adopted.event


def test_the_log_line_names_every_figure() -> None:
    line = cost_line(
        {"core_seconds": 248.0, "gib_seconds": 289.5, "gpu_seconds": 41.0,
         "pending_seconds": 4.0, "peak_executors": 2, "executor_pods": 3}
    )  # fmt: skip
    assert line == (
        "cost: 248 core-seconds, 289.5 GiB-seconds, 41 GPU-seconds; peak 2 executors "
        "(3 executor pods); driver pending 4 s"
    )


def test_the_stores_slim_pod_keeps_what_the_cost_reads_and_shares_alike_requests() -> None:
    full = spark_pod("e1", started=3, finished=9, requests={"cpu": "1", "memory": "1Gi"})
    full["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi"
    full["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    slim = slim_pod(full)
    assert slim["spec"]["containers"] == [
        {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    ]
    assert pod_cost(slim, None) == pod_cost(full, None)
    other = slim_pod(spark_pod("e2", started=4))
    assert other["spec"] is slim_pod(spark_pod("e3", started=5))["spec"]


@pytest.mark.parametrize("value", [None, "", "yesterday"])
def test_unreadable_timestamps_read_as_unknown(value: Any) -> None:
    pod = spark_pod("e1", started=0)
    pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] = value
    pod["metadata"]["creationTimestamp"] = value
    cost = pod_cost(pod, EPOCH0 + 5)
    assert (cost.started, cost.created, cost.running_seconds, cost.pending_seconds) == (
        None, None, 0.0, 0.0,
    )  # fmt: skip


def test_a_listed_executor_counts_for_the_peak_though_this_clock_lags_its_start() -> None:
    ahead = [spark_pod("e1", started=30), spark_pod("e2", started=31)]
    cost = account(NO_COST, (), ahead, (), EPOCH0 + 20)  # the kubelet's clock runs ahead
    assert cost.peak_executors == 2
