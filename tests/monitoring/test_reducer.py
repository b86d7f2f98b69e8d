"""The reducer on plain pod dicts: driver outcome, pending reasons, executors, odd input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind
from airflow_provider_sparkk8s.monitoring.reducer import (
    driver_has_ended,
    executor_state,
    reduce_application,
    remember_executors,
    summarize_executors,
    with_ended_driver,
)
from testenv.harness.pod_builders import SCHEDULED, pod, running, terminated, waiting


def test_no_pods_means_the_driver_is_gone():
    state = reduce_application([], driver_pod_name="app-driver")
    assert state.state == "unknown"
    assert state.reason == "DriverPodNotFound"
    assert "app-driver" in state.message
    assert state.terminal


def test_fresh_pod_without_conditions_is_submitted():
    assert reduce_application([pod(phase="Pending")]).state == "submitted"
    assert reduce_application([pod(phase=None)]).state == "submitted"


def test_scheduled_pod_creating_containers_is_pending_without_problem():
    state = reduce_application(
        [pod(conditions=SCHEDULED, containers=[waiting("ContainerCreating")])]
    )
    assert (state.state, state.reason, state.problem) == ("pending", "ContainerCreating", False)


def test_image_pull_backoff_is_a_pending_problem_with_its_message():
    state = reduce_application(
        [
            pod(
                conditions=SCHEDULED,
                containers=[waiting("ImagePullBackOff", "Back-off pulling image x")],
            )
        ]
    )
    assert state.state == "pending"
    assert state.reason == "ImagePullBackOff"
    assert state.problem
    assert "Back-off pulling image x" in state.message


def test_waiting_problem_in_init_container_counts():
    state = reduce_application(
        [
            pod(
                conditions=SCHEDULED,
                init_containers=[waiting("InvalidImageName", name="init")],
                containers=[waiting("PodInitializing")],
            )
        ]
    )
    assert (state.reason, state.problem) == ("InvalidImageName", True)
    assert "init" in state.message


def test_unschedulable_condition_gives_reason_and_message():
    unschedulable = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: node(s) didn't match selector",
        }
    ]
    state = reduce_application([pod(conditions=unschedulable)])
    assert (state.state, state.reason, state.problem) == ("pending", "Unschedulable", True)
    assert state.message.startswith("0/3 nodes")


def test_running_driver():
    state = reduce_application([pod(phase="Running", conditions=SCHEDULED, containers=[running()])])
    assert state.state == "running"
    assert state.started_at == "2026-01-01T00:00:05Z"
    assert state.driver_pod == "app-driver"


def test_driver_exit_zero_succeeds_even_while_a_sidecar_keeps_the_pod_running():
    state = reduce_application(
        [pod(phase="Running", containers=[terminated(0, "Completed"), running("sidecar")])]
    )
    assert (state.state, state.exit_code, state.reason) == ("succeeded", 0, "Completed")


def test_driver_nonzero_exit_fails_with_reason_code_and_message():
    state = reduce_application(
        [pod(phase="Failed", containers=[terminated(137, "OOMKilled", "out of memory")])]
    )
    assert state.state == "failed"
    assert (state.reason, state.exit_code, state.termination_message) == (
        "OOMKilled",
        137,
        "out of memory",
    )
    assert "exit code 137" in state.describe()


def test_outcome_comes_from_the_named_template_container_not_the_phase():
    statuses = [
        terminated(1, "Error", name="my-driver"),
        terminated(0, name="spark-kubernetes-driver"),
    ]
    state = reduce_application(
        [pod(phase="Running", containers=statuses)], driver_container="my-driver"
    )
    assert (state.state, state.exit_code) == ("failed", 1)


def test_failed_pod_without_container_status_uses_pod_reason():
    evicted = pod(phase="Failed")
    evicted["status"].update(reason="Evicted", message="The node was low on memory.")
    state = reduce_application([evicted])
    assert (state.state, state.reason, state.message) == (
        "failed",
        "Evicted",
        "The node was low on memory.",
    )


def test_sparks_exit_exception_annotation_is_read_as_its_first_line():
    failed = pod(
        phase="Failed",
        containers=[terminated(1, "Error")],
        annotations={
            "spark.exit-exception": "\njava.lang.RuntimeException: boom\n\tat Main.main(Main.java:3)"
        },
    )
    state = reduce_application([failed])
    assert state.exit_exception == "java.lang.RuntimeException: boom"
    assert state.termination_message is None  # the container's own message only
    assert state.to_dict()["exit_exception"] == "java.lang.RuntimeException: boom"


def test_a_disruption_condition_or_a_deletion_says_the_cluster_took_the_driver():
    preempted = pod(
        phase="Failed",
        containers=[terminated(143, "Error")],
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    )
    assert reduce_application([preempted]).disruption == "PreemptionByScheduler"
    deleted = pod(phase="Failed", containers=[terminated(143, "Error")])
    deleted["metadata"]["deletionTimestamp"] = "2026-11-29T18:00:00Z"
    assert reduce_application([deleted]).disruption == "Deleted"
    assert reduce_application([pod(phase="Failed", containers=[terminated(1)])]).disruption is None


def test_driver_pod_name_picks_that_pod():
    pods = [
        pod("old-driver", phase="Failed", containers=[terminated(1)]),
        pod("new-driver", phase="Running", containers=[running()]),
    ]
    assert reduce_application(pods, driver_pod_name="new-driver").state == "running"
    assert reduce_application(pods, driver_pod_name="other").state == "unknown"


def test_executor_states_follow_spark_classification():
    assert executor_state(pod(role="executor", phase="Pending")) == "pending"
    assert (
        executor_state(
            pod(role="executor", phase="Running", containers=[running("spark-kubernetes-executor")])
        )
        == "running"
    )
    assert (
        executor_state(
            pod(
                role="executor",
                phase="Running",
                containers=[terminated(0, name="spark-kubernetes-executor")],
            )
        )
        == "succeeded"
    )
    # checkAllContainers: a side-car that failed fails the executor when restartPolicy is Never
    sidecar_failed = pod(
        role="executor",
        phase="Running",
        containers=[running("spark-kubernetes-executor"), terminated(2, name="side")],
    )
    assert executor_state(sidecar_failed) == "failed"
    sidecar_failed["spec"]["restartPolicy"] = "Always"
    assert executor_state(sidecar_failed) == "running"
    deleting = pod(role="executor", phase="Pending", deletionTimestamp="2026-01-01T00:00:00Z")
    assert executor_state(deleting) == "deleted"
    deleting_running = pod(
        role="executor", phase="Running", deletionTimestamp="2026-01-01T00:00:00Z"
    )
    assert executor_state(deleting_running) == "running"
    assert executor_state(pod(role="executor", phase="Weird")) == "unknown"
    assert executor_state(pod(role="executor", phase="Failed")) == "failed"


def test_executor_summary_counts_and_lists_failures():
    pods = [
        pod("d", phase="Running", containers=[running()]),
        pod(
            "e1",
            role="executor",
            exec_id="1",
            phase="Running",
            containers=[running("spark-kubernetes-executor")],
        ),
        pod(
            "e2",
            role="executor",
            exec_id="2",
            phase="Failed",
            containers=[terminated(137, "OOMKilled", name="spark-kubernetes-executor")],
        ),
        pod("e3", role="executor", exec_id="3", phase="Pending"),
        pod(
            "e4",
            role="executor",
            exec_id="4",
            phase="Failed",
            containers=[terminated(1, "Error", "lost", name="spark-kubernetes-executor")],
        ),
    ]
    summary = summarize_executors(pods)
    assert summary.counts == {"failed": 2, "pending": 1, "running": 1}
    assert summary.total == 4
    assert [(f.pod_name, f.executor_id, f.reason, f.exit_code) for f in summary.failures] == [
        ("e2", "2", "OOMKilled", 137),
        ("e4", "4", "Error", 1),
    ]
    state = reduce_application(pods)
    assert state.executors == summary
    assert state.to_dict()["executors"]["failures"][0]["reason"] == "OOMKilled"


def test_executors_that_came_and_went_still_count_at_the_end():
    """Spark deletes its executors when it stops, before its driver ends: the final snapshot
    has none. Each counts by its first ended version: exit 0 succeeded, ended on its own
    failed, ended while being deleted (Spark stopping it) deleted; never seen ending, deleted."""
    driver_running = pod("d", phase="Running", containers=[running()])
    executor = "spark-kubernetes-executor"

    def ex(name, phase="Running", code=None, deleting=False):
        containers = [running(executor) if code is None else terminated(code, "x", name=executor)]
        made = pod(name, role="executor", exec_id=name[1:], phase=phase, containers=containers)
        if deleting:
            made["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return made

    killed = ex("e2", "Failed", 137)
    seen = remember_executors({}, [driver_running, ex("e1"), ex("e2"), ex("e3"), ex("e4")])
    seen = remember_executors(seen, [driver_running, ex("e1"), killed, ex("e3"), ex("e4")])
    # Later versions only add the deletion that followed the end: the first end is kept.
    seen = remember_executors(seen, [ex("e2", "Failed", 137, deleting=True)])
    seen = remember_executors(seen, [ex("e3", "Succeeded", 0, deleting=True)])
    seen = remember_executors(seen, [ex("e4", "Failed", 1, deleting=True)])
    assert sorted(seen) == ["e1", "e2", "e3", "e4"]
    assert seen["e2"] is killed

    done = pod("d", phase="Succeeded", containers=[terminated(0, "Completed")])
    state = reduce_application([done], seen_executors=seen)
    assert state.state == "succeeded"
    assert state.executors.counts == {"deleted": 2, "failed": 1, "succeeded": 1}
    assert [(f.pod_name, f.exit_code) for f in state.executors.failures] == [("e2", 137)]
    # Without the memory, the final snapshot alone counts nothing.
    assert reduce_application([done]).executors.total == 0
    # A listed pod is counted as listed, not as remembered.
    assert reduce_application([done, ex("e1")], seen_executors=seen).executors.counts == {
        "deleted": 1, "failed": 1, "running": 1, "succeeded": 1,
    }  # fmt: skip


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12))
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    [
        "metadata",
        "status",
        "spec",
        "labels",
        "phase",
        "state",
        "name",
        "containerStatuses",
        "conditions",
        "terminated",
        "waiting",
        "running",
        "exitCode",
        "reason",
        "type",
        "spark-role",
    ]
)
pod_like = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(field_names, children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(pod_like, json_value), max_size=4), st.one_of(st.none(), st.text(max_size=5))
)
def test_reducer_never_raises_on_pod_shaped_garbage(pods, name):
    state = reduce_application(pods, driver_pod_name=name)
    assert state.state in {"submitted", "pending", "running", "succeeded", "failed", "unknown"}
    state.to_dict()
    state.describe()


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=-300, max_value=300),
    st.sampled_from(["Pending", "Running", "Failed", "Succeeded"]),
)
def test_any_terminated_driver_decides_by_exit_code(code, phase):
    state = reduce_application([pod(phase=phase, containers=[terminated(code)])])
    assert state.state == ("succeeded" if code == 0 else "failed")
    assert state.exit_code == code


def test_a_driver_deleted_after_it_ended_still_tells_how_it_ended():
    running_driver = pod("d", phase="Running", containers=[running()])
    failed = pod("d", phase="Failed", containers=[terminated(3, "Error", "boom")])
    executor = pod("e1", role="executor", phase="Running", containers=[running()])
    assert not driver_has_ended(running_driver) and driver_has_ended(failed)
    assert not driver_has_ended(pod("e1", role="executor", phase="Failed"))
    # Gone from the pods: its ended version stands in for it.
    state = reduce_application(with_ended_driver([executor], failed))
    assert (state.state, state.exit_code) == ("failed", 3)
    # Present: the pods as they are; nothing known: still vanished.
    assert with_ended_driver([running_driver], failed) == (running_driver,)
    assert reduce_application(with_ended_driver([executor], None)).state == "unknown"


def test_states_without_executors_share_one_summary_and_their_dicts_are_their_own():
    driver_only = [pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])]
    first = reduce_application(driver_only)
    second = reduce_application(driver_only)
    assert first.executors is second.executors is summarize_executors([])
    assert first.executors.total == 0
    payload = first.to_dict()
    payload["executors"]["counts"]["running"] = 1  # a caller's copy, not the shared summary
    assert reduce_application(driver_only).to_dict()["executors"] == {"counts": {}, "failures": []}


EVICTING = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "EvictionByEvictionAPI",
    "message": "Eviction API: evicting",
}


def test_an_evicted_driver_says_eviction_as_its_cause():
    """The Eviction API's condition, then SIGTERM: the container's bare Error gives way."""
    evicted = pod("d", phase="Failed", containers=[terminated(143, "Error")], conditions=[EVICTING])
    state = reduce_application([evicted], driver_pod_name="d")
    assert (state.state, state.reason, state.exit_code) == ("failed", "EvictionByEvictionAPI", 143)
    assert state.message == (
        "driver pod d was evicted through the Eviction API (kubectl drain, a node autoscaler's "
        "consolidation, a descheduler) (Kubernetes: Eviction API: evicting)"
    )
    assert "evicted through the Eviction API" in state.describe()


def test_a_disruption_leaves_a_more_telling_reason_and_a_running_driver_alone():
    oom = pod("d", phase="Failed", containers=[terminated(137, "OOMKilled")], conditions=[EVICTING])
    assert reduce_application([oom]).reason == "OOMKilled"
    kubelet = {**EVICTING, "reason": "TerminationByKubelet"}
    by_kubelet = pod("d", phase="Failed", conditions=[kubelet])
    by_kubelet["status"]["reason"] = "Evicted"
    assert reduce_application([by_kubelet]).reason == "Evicted"  # the kubelet's own word
    still_running = pod("d", phase="Running", containers=[running()], conditions=[EVICTING])
    state = reduce_application([still_running])
    assert (state.state, state.reason, state.disruption) == (
        "running",
        None,
        "EvictionByEvictionAPI",
    )
    deleted = pod("d", phase="Failed", containers=[terminated(143, "Error")])
    deleted["metadata"]["deletionTimestamp"] = "2026-11-29T18:00:00Z"
    assert reduce_application([deleted]).reason == "Error"  # a deletion names no cause


def test_a_driver_that_failed_by_itself_before_the_condition_stays_an_application_error():
    """A kept failed driver evicted later (a drain, the pod GC) failed by itself: its exit
    stays the cause, so the retry policy does not retry the code as infrastructure."""
    later = {**EVICTING, "lastTransitionTime": "2026-01-01T00:05:00Z"}
    failed = pod("d", phase="Failed", containers=[terminated(1, "Error")], conditions=[later])
    state = reduce_application([failed], driver_pod_name="d")
    assert (state.state, state.reason, state.exit_code) == ("failed", "Error", 1)
    assert failure_kind(state.to_dict()) == "application_error"
    at_the_end = {**EVICTING, "lastTransitionTime": "2026-01-01T00:01:00Z"}
    evicted = pod(
        "d", phase="Failed", containers=[terminated(143, "Error")], conditions=[at_the_end]
    )
    assert reduce_application([evicted], driver_pod_name="d").reason == "EvictionByEvictionAPI"
