"""The follower on plain pod dicts: its memory between looks, transitions, deadlines and the
one final event."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.following.follower import (
    NO_EXECUTORS,
    Following,
    FollowSpec,
    known_cluster_queue,
    note_queue,
    observe,
    queue_read_due,
    seconds_to_deadline,
    tick,
)
from airflow_provider_sparkk8s.monitoring.kueue_workload import READ_INTERVAL, QueueView, epoch
from testenv.harness.pod_builders import APP, SCHEDULED, pod, running, terminated, waiting

EXECUTOR = "spark-kubernetes-executor"
SPEC = FollowSpec(APP, "ns", driver_pod_name="d", start_time=1000.0)


def executor(name: str, phase: str = "Running", *containers: dict) -> dict:
    return pod(
        name,
        role="executor",
        exec_id=name[-1],
        phase=phase,
        containers=list(containers) or [running(EXECUTOR)],
    )


def deleting(p: dict) -> dict:
    return {**p, "metadata": {**p["metadata"], "deletionTimestamp": "2026-01-01T00:02:00Z"}}


def test_a_driver_followed_to_success_gives_one_transition_per_state_and_one_final_event():
    following = Following(SPEC)
    looks = [
        [pod("d", phase="Pending")],
        [pod("d", phase="Pending")],
        [pod("d", phase="Running", conditions=SCHEDULED, containers=[running()])],
        [pod("d", phase="Succeeded", containers=[terminated(0, "Completed")])],
    ]
    transitions, finals = [], []
    for pods in looks:
        step = observe(following, pods)
        following = step.following
        transitions.append(step.transition and step.transition.state)
        finals.append(step.final)
    assert transitions == ["submitted", None, "running", "succeeded"]
    assert finals[:3] == [None, None, None]
    final = finals[3]
    assert (final["status"], final["state"], final["exit_code"]) == ("success", "succeeded", 0)
    assert (final["application_id"], final["namespace"], final["driver_pod"]) == (APP, "ns", "d")
    assert following.ended is not None and following.ended.state == "succeeded"
    # Ended once: a later look reads the pods, but ends nothing again.
    again = observe(following, looks[3])
    assert again.final is None and again.following.state.state == "succeeded"
    assert tick(following, 10**9).final is None


def test_executors_that_came_and_went_are_counted_from_how_they_ended():
    """Spark deletes a killed executor's pod at once and its others when it stops: the
    latest pods hold none, the history between looks holds how each ended."""
    following = Following(SPEC)
    driver = pod("d", phase="Running", containers=[running()])
    following = observe(following, [driver, executor("e1"), executor("e2")]).following
    killed = executor("e1", "Failed", terminated(137, "Error", name=EXECUTOR))
    stopped = deleting(executor("e2", "Running", terminated(143, "Error", name=EXECUTOR)))
    step = observe(following, [driver], history=[killed, deleting(killed), stopped])
    assert step.following.state.executors.counts == {"deleted": 1, "failed": 1}
    (failure,) = step.following.state.executors.failures
    assert (failure.pod_name, failure.exit_code) == ("e1", 137)
    end = observe(step.following, [pod("d", phase="Succeeded", containers=[terminated(0)])]).final
    assert end["executors"]["counts"] == {"deleted": 1, "failed": 1}


def test_a_driver_deleted_right_after_it_ended_reports_how_it_ended():
    following = observe(
        Following(SPEC), [pod("d", phase="Running", containers=[running()])]
    ).following
    ended = pod("d", phase="Failed", containers=[terminated(3, "Error", "boom")])
    step = observe(following, [], history=[ended])
    assert (step.final["status"], step.final["exit_code"]) == ("failed", 3)
    assert [p["metadata"]["name"] for p in step.pods] == ["d"]  # read with the driver's end


def test_a_vanished_driver_is_driver_pod_not_found():
    step = observe(Following(SPEC), [])
    assert step.following.state.state == "unknown"
    assert (step.final["status"], step.final["reason"]) == ("failed", "DriverPodNotFound")
    assert "d of application" in step.final["message"]


def test_the_startup_timeout_fires_only_before_the_driver_runs():
    spec = FollowSpec(APP, "ns", "d", start_time=1000.0, startup_timeout=60, run_timeout=600)
    pulling = pod("d", conditions=SCHEDULED, containers=[waiting("ImagePullBackOff", "no")])
    following = observe(Following(spec), [pulling]).following
    assert seconds_to_deadline(following, 1010.0) == 50.01
    assert tick(following, 1059.0).final is None
    timeout = tick(following, 1060.0)
    assert (timeout.final["status"], timeout.final["reason"]) == ("timeout", "StartupTimeout")
    assert "ImagePullBackOff" in timeout.final["message"]
    assert timeout.following.ended.reason == "StartupTimeout"
    assert seconds_to_deadline(timeout.following, 1060.0) is None  # ended: nothing to wait for

    started = observe(following, [pod("d", phase="Running", containers=[running()])]).following
    assert tick(started, 1100.0).final is None  # running: only the run timeout is left
    assert seconds_to_deadline(started, 1100.0) == 500.01
    assert tick(started, 1600.0).final["reason"] == "RunTimeout"


NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/apache/spark:'
    '3.5.99": failed to resolve reference "docker.io/apache/spark:3.5.99": docker.io/apache/'
    "spark:3.5.99: not found"
)
TIMED_OUT = (
    'failed to pull and unpack image "registry.example.com/spark:1": failed to resolve reference '
    '"registry.example.com/spark:1": failed to do request: Head "https://registry.example.com/v2/'
    'spark/manifests/1": dial tcp 203.0.113.7:443: i/o timeout'
)


def pulling_driver(reason: str, message: str) -> dict:
    status = waiting(reason, message)
    status["image"] = "apache/spark:3.5.99"
    return pod("d", conditions=SCHEDULED, containers=[status])


def test_an_image_its_registry_says_does_not_exist_ends_the_following_at_once():
    spec = FollowSpec(APP, "ns", "d", start_time=1000.0, startup_timeout=600)
    following = observe(Following(spec), [pod("d")]).following  # submitted
    step = observe(following, [pulling_driver("ErrImagePull", NOT_FOUND)], now=1002.0)
    final = step.final
    assert final is not None, "the first ErrImagePull that says not found ends it"
    assert (final["status"], final["state"], final["reason"]) == (
        "failed",
        "failed",
        "ImageNotFound",
    )
    assert final["driver_pod"] == "d" and final["exit_code"] is None
    assert final["message"].startswith(
        'image "apache/spark:3.5.99" of container spark-kubernetes-driver does not exist'
    )
    assert final["message"].endswith("docker.io/apache/spark:3.5.99: not found")
    assert step.transition is not None and step.transition.reason == "ImageNotFound"
    assert step.following.ended is not None and step.following.state.state == "failed"
    assert seconds_to_deadline(step.following, 1002.0) is None  # nothing left to wait for
    # Ended once: the kubelet's back-off that follows ends nothing again.
    backoff = f'Back-off pulling image "apache/spark:3.5.99": ErrImagePull: {NOT_FOUND}'
    again = observe(step.following, [pulling_driver("ImagePullBackOff", backoff)])
    assert again.final is None and again.transition is None


def test_a_transient_pull_error_waits_for_the_startup_timeout_as_before():
    spec = FollowSpec(APP, "ns", "d", start_time=1000.0, startup_timeout=60)
    following = Following(spec)
    for reason, message in [
        ("ErrImagePull", TIMED_OUT),
        ("ImagePullBackOff", f'Back-off pulling image "registry.example.com/spark:1": {TIMED_OUT}'),
        ("ImagePullBackOff", 'Back-off pulling image "registry.example.com/spark:1"'),
    ]:
        step = observe(following, [pulling_driver(reason, message)], now=1010.0)
        assert step.final is None and step.following.state.state == "pending"
        following = step.following
    timeout = tick(following, 1060.0).final
    assert (timeout["status"], timeout["reason"]) == ("timeout", "StartupTimeout")
    assert "pending, ImagePullBackOff" in timeout["message"]


def test_no_deadline_without_timeouts():
    following = Following(FollowSpec(APP, "ns"))
    assert seconds_to_deadline(following, 10**9) is None
    assert tick(following, 10**9).final is None


def test_without_a_pinned_driver_the_newest_one_counts_and_names_the_event():
    old = pod("old", phase="Failed", containers=[terminated(1)])
    new = pod("new", phase="Succeeded", containers=[terminated(0)])
    new["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    final = observe(Following(FollowSpec(APP, "ns")), [old, new]).final
    assert (final["status"], final["driver_pod"]) == ("success", "new")


def test_a_waiting_application_without_executors_holds_no_memory_of_its_own():
    """Thousands of triggers wait at once: with no executor seen, each shares one empty map."""
    step = observe(Following(SPEC), [pod("d", phase="Running", containers=[running()])])
    assert step.following.seen_executors is NO_EXECUTORS
    step = observe(step.following, [executor("e-1")])
    assert set(step.following.seen_executors) == {"e-1"}


def test_any_object_with_the_spec_attributes_can_be_followed():
    """The trigger follows itself (its attributes are FollowSpec's), keeping no copy."""

    class Named:
        application_id, namespace, driver_pod_name = APP, "ns", "d"
        driver_container, executor_container = "spark-kubernetes-driver", EXECUTOR
        start_time, startup_timeout, run_timeout, queue_timeout = 1000.0, None, 60.0, None

    named = Named()
    assert tick(Following(named), 1059.0).final is None
    final = tick(Following(named), 1061.0).final
    assert final is not None and final["reason"] == "RunTimeout"
    assert (final["application_id"], final["namespace"]) == (APP, "ns")


# ------------------------------------------------------------------ Kueue


CREATED = epoch("2026-01-01T00:00:00Z")  # the builders' creationTimestamp
assert CREATED is not None
KUEUE_SPEC = FollowSpec(APP, "ns", "d", start_time=CREATED, startup_timeout=60, queue_timeout=600)
REASON = "couldn't assign flavors to pod set driver: insufficient unused quota for cpu"
QUEUED_VIEW = QueueView(
    found=True, status=f"queued in ClusterQueue cq: {REASON}", cluster_queue="cq",
    reason_given=True,
)  # fmt: skip


def gated(name: str = "d") -> dict:
    driver = pod(name)
    driver["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-queue"
    driver["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    return driver


def admitted(name: str = "d") -> dict:
    driver = gated(name)
    del driver["spec"]["schedulingGates"]
    return driver


def test_a_gated_driver_is_read_once_then_slowly_and_names_kueues_cluster_queue_and_reason():
    first = observe(Following(KUEUE_SPEC), [gated()])
    assert first.transition is not None and first.transition.reason == "QueuedByKueue"
    assert "LocalQueue team-queue" in (first.transition.message or "")
    following = first.following
    assert queue_read_due(following, CREATED + 1)
    noted = note_queue(following, QUEUED_VIEW, CREATED + 1)
    assert noted.transition is not None  # the sentence changed: worth a log line
    assert (
        noted.transition.describe()
        == f"pending, QueuedByKueue: queued in ClusterQueue cq: {REASON}"
    )
    assert known_cluster_queue(noted.following) == "cq"
    assert not queue_read_due(noted.following, CREATED + 2)
    assert queue_read_due(noted.following, CREATED + 1 + READ_INTERVAL)
    # the wait wakes for the next read (the queue timeout is further away)
    assert seconds_to_deadline(noted.following, CREATED + 2) == READ_INTERVAL - 1 + 0.01
    # a later look at the same gated pod keeps Kueue's sentence, with no new transition
    again = observe(noted.following, [gated()])
    assert again.transition is None
    assert again.following.state.message == QUEUED_VIEW.status  # type: ignore[union-attr]
    # the same sentence read again is no transition either
    assert note_queue(again.following, QUEUED_VIEW, CREATED + 70).transition is None


def test_a_failed_read_keeps_the_last_view_and_waits_for_the_cadence():
    following = note_queue(observe(Following(KUEUE_SPEC), [gated()]).following, QUEUED_VIEW, 5.0)
    failed = note_queue(following.following, None, CREATED + 100).following
    assert failed.kueue.view == QUEUED_VIEW  # type: ignore[union-attr]
    assert not queue_read_due(failed, CREATED + 101)


def test_queued_time_is_not_startup_time_and_the_queue_timeout_ends_it_as_infrastructure():
    queued = observe(Following(KUEUE_SPEC), [gated()]).following
    assert tick(queued, CREATED + 599).final is None  # far past startup_timeout=60: queued
    timeout = tick(queued, CREATED + 600)
    assert timeout.final is not None
    assert (timeout.final["status"], timeout.final["reason"]) == ("timeout", "QueueTimeout")
    assert timeout.final["queued_seconds"] == 600.0  # queued to the end


def test_admission_starts_the_startup_timeout_and_gives_queued_seconds():
    queued = note_queue(
        observe(Following(KUEUE_SPEC), [gated()]).following, QUEUED_VIEW, CREATED + 1
    ).following
    past_gate = observe(queued, [admitted()]).following
    ticked = tick(past_gate, CREATED + 100).following  # the clock's admission until a read
    assert ticked.kueue.admitted_at == CREATED + 100  # type: ignore[union-attr]
    assert queue_read_due(ticked, CREATED + 100)  # once, for Kueue's own timestamp
    view = QueueView(found=True, cluster_queue="cq", admitted_at="2026-01-01T00:01:30Z")
    read = note_queue(ticked, view, CREATED + 100).following
    assert read.kueue.queued_seconds() == 90.0  # type: ignore[union-attr]
    assert not queue_read_due(read, CREATED + 200)  # nothing more to read
    # the startup timeout (60 s) counts from the admission (90 s), not the submission
    assert tick(read, CREATED + 149).final is None
    timeout = tick(read, CREATED + 150).final
    assert timeout is not None and timeout["reason"] == "StartupTimeout"
    assert timeout["queued_seconds"] == 90.0
    done = observe(read, [pod("d", phase="Succeeded", containers=[terminated(0)])])
    assert done.final is not None and done.final["queued_seconds"] == 90.0


def test_a_driver_admitted_before_the_first_look_is_read_once_and_no_other_is_read():
    first = observe(Following(KUEUE_SPEC), [admitted()]).following
    assert first.kueue is not None and queue_read_due(first, CREATED + 5)
    plain = observe(Following(KUEUE_SPEC), [pod("d")]).following
    assert plain.kueue is None and not queue_read_due(plain, CREATED + 5)
    done = observe(plain, [pod("d", phase="Succeeded", containers=[terminated(0)])])
    assert done.final is not None and done.final["queued_seconds"] is None


def test_a_driver_evicted_and_gone_before_its_end_was_seen_is_reported_as_evicted():
    """The last look saw the Eviction API's condition on the running driver; the next finds
    no pod (deleted before the kubelet reported the container's end)."""
    evicting = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    marked = deleting(pod("d", phase="Running", containers=[running()], conditions=[evicting]))
    following = observe(Following(SPEC), [marked]).following
    assert following.ended is None
    step = observe(following, [])
    assert (step.final["status"], step.final["reason"]) == ("failed", "EvictionByEvictionAPI")
    assert step.final["disruption"] == "EvictionByEvictionAPI"
    assert step.final["message"].startswith("driver pod d was evicted through the Eviction API")
    assert step.final["message"].endswith("and is gone")
    assert step.following.ended is not None and step.following.ended.state == "failed"
    # A driver merely deleted (no condition) still reads as vanished.
    plain = observe(Following(SPEC), [deleting(pod("d", phase="Running", containers=[running()]))])
    assert observe(plain.following, []).final["reason"] == "DriverPodNotFound"


def test_the_disruption_mark_in_a_looks_history_explains_a_vanished_driver():
    """The trigger's store keeps the marked version as history when the driver is gone
    before the trigger looked again: the last look saw it running, unmarked."""
    evicting = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    running_driver = pod("d", phase="Running", containers=[running()])
    following = observe(Following(SPEC), [running_driver]).following
    marked = pod("d", phase="Running", containers=[running()], conditions=[evicting])
    step = observe(following, [], history=[marked])
    assert (step.final["reason"], step.final["disruption"]) == (
        "EvictionByEvictionAPI",
        "EvictionByEvictionAPI",
    )
    other = pod("other", phase="Running", containers=[running()], conditions=[evicting])
    assert observe(following, [], history=[other]).final["reason"] == "DriverPodNotFound"
