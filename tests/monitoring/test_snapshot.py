"""Watch events and full lists merged into snapshots, with resourceVersion ordering."""

from __future__ import annotations

import json
import sys

from airflow_provider_sparkk8s.monitoring.snapshot import (
    Change,
    Snapshot,
    apply_list,
    merge_event,
    pods_by_application,
    slim_pod,
)
from testenv.harness.pod_builders import APP, pod

OTHER = "spark-ffffffffffffffffffffffffffffffff"


def ev(kind, obj):
    return {"type": kind, "object": obj}


def apply_event(snapshot, event):
    """merge_event as the store calls it: into copies of the snapshot's dicts."""
    pods, tombstones = dict(snapshot.pods), dict(snapshot.tombstones)
    version, changed = merge_event(pods, tombstones, snapshot.resource_version, event)
    return Change(Snapshot(pods, tombstones, version), changed)


def names(snapshot):
    return sorted(p["metadata"]["name"] for p in snapshot.pods.values())


def test_added_then_modified_then_deleted():
    change = apply_event(Snapshot(), ev("ADDED", pod("d", rv="5")))
    assert names(change.snapshot) == ["d"] and change.changed_apps == {APP}
    change = apply_event(change.snapshot, ev("MODIFIED", pod("d", phase="Running", rv="7")))
    assert change.snapshot.pods["uid-d"]["status"]["phase"] == "Running"
    assert change.snapshot.resource_version == "7"
    change = apply_event(change.snapshot, ev("DELETED", pod("d", rv="9")))
    assert names(change.snapshot) == [] and change.changed_apps == {APP}
    assert change.snapshot.tombstones == {"uid-d": "9"}


def test_stale_event_is_ignored():
    snap = apply_event(Snapshot(), ev("MODIFIED", pod("d", phase="Running", rv="10"))).snapshot
    change = apply_event(snap, ev("MODIFIED", pod("d", phase="Pending", rv="8")))
    assert change.snapshot.pods["uid-d"]["status"]["phase"] == "Running"
    assert change.changed_apps == frozenset()


def test_bookmark_only_moves_the_resource_version():
    snap = apply_event(Snapshot(), ev("ADDED", pod("d", rv="3"))).snapshot
    change = apply_event(snap, ev("BOOKMARK", {"metadata": {"resourceVersion": "40"}}))
    assert change.snapshot.resource_version == "40"
    assert change.snapshot.pods == snap.pods and not change.changed_apps


def test_unknown_event_types_change_nothing():
    pods, tombstones = {"uid-d": pod("d", rv="3")}, {"uid-e": "2"}
    before = (dict(pods), dict(tombstones))
    for event in ({"type": "ERROR", "object": {"code": 410}}, ev("ADDED", "nonsense")):
        assert merge_event(pods, tombstones, "3", event) == ("3", frozenset())
        assert (pods, tombstones) == before


def test_full_list_replaces_and_reports_what_changed():
    snap = Snapshot()
    for p in (pod("a", rv="1"), pod("b", rv="2", app=OTHER)):
        snap = apply_event(snap, ev("ADDED", p)).snapshot
    # the list at rv 20: a changed, b gone (deleted while the watch was down), c new
    change = apply_list(snap, [pod("a", phase="Running", rv="15"), pod("c", rv="12")], "20")
    assert names(change.snapshot) == ["a", "c"]
    assert change.changed_apps == {APP, OTHER}
    assert change.snapshot.resource_version == "20"
    assert pods_by_application(change.snapshot) == {APP: list(change.snapshot.pods.values())}


def test_identical_list_reports_no_change():
    snap = apply_list(Snapshot(), [pod("a", rv="1")], "5").snapshot
    assert apply_list(snap, [pod("a", rv="1")], "6").changed_apps == frozenset()


def test_list_older_than_watch_keeps_newer_pods_and_honours_tombstones():
    snap = apply_list(Snapshot(), [pod("a", rv="1"), pod("b", rv="2")], "10").snapshot
    snap = apply_event(snap, ev("MODIFIED", pod("a", phase="Running", rv="30"))).snapshot
    snap = apply_event(snap, ev("ADDED", pod("n", rv="31"))).snapshot
    snap = apply_event(snap, ev("DELETED", pod("b", rv="32"))).snapshot
    # a list that started at rv 25: older than everything the watch delivered since
    change = apply_list(snap, [pod("a", rv="20"), pod("b", rv="2")], "25")
    assert names(change.snapshot) == ["a", "n"]
    assert change.snapshot.pods["uid-a"]["status"]["phase"] == "Running"
    assert change.changed_apps == frozenset()
    # a newer list confirms the deletion and drops the tombstone
    newer = apply_list(
        change.snapshot, [pod("a", phase="Running", rv="30"), pod("n", rv="31")], "40"
    )
    assert newer.snapshot.tombstones == {}
    assert names(newer.snapshot) == ["a", "n"]


def test_scoped_list_touches_only_its_application():
    snap = apply_list(Snapshot(), [pod("a", rv="1"), pod("b", rv="2", app=OTHER)], "10").snapshot
    scoped = apply_list(
        snap, [], "11", scope=lambda p: p["metadata"]["labels"]["spark-app-selector"] == APP
    )
    assert names(scoped.snapshot) == ["b"]
    assert scoped.changed_apps == {APP}
    assert scoped.snapshot.resource_version == "10"


def test_slim_pod_keeps_what_the_reducer_reads():
    full = pod("d", phase="Running", annotations={"spark.exit-exception": "x", "big": "y" * 1000})
    full["metadata"]["managedFields"] = [{"manager": "kubectl"}] * 10
    full["spec"]["volumes"] = [{"name": "v"}]
    slim = slim_pod(full)
    assert slim["metadata"]["annotations"] == {"spark.exit-exception": "x"}
    assert "managedFields" not in slim["metadata"] and "volumes" not in slim["spec"]
    assert slim["status"] == full["status"]
    assert slim["metadata"]["labels"] == full["metadata"]["labels"]


def test_slim_pod_keeps_a_containers_image_for_a_pull_failure_to_name():
    status = {"name": "spark-kubernetes-driver", "image": "apache/spark:3.5.99", "imageID": "",
              "state": {"waiting": {"reason": "ErrImagePull", "message": "x: not found"}}}  # fmt: skip
    full = pod("d", containers=[status])
    [kept] = slim_pod(full)["status"]["containerStatuses"]
    assert kept == {key: status[key] for key in ("name", "image", "state")}


def test_a_list_keeps_the_held_object_when_the_version_is_the_same():
    held = apply_list(Snapshot(), [pod("a", rv="1")], "5").snapshot
    [kept] = held.pods.values()
    relisted = apply_list(held, [pod("a", rv="1")], "6").snapshot
    [again] = relisted.pods.values()
    assert again is kept  # readers (the trigger, _by_app) and the snapshot share one object
    newer = apply_list(relisted, [pod("a", phase="Running", rv="7")], "8")
    assert next(iter(newer.snapshot.pods.values())) is not kept and newer.changed_apps == {APP}


def test_slim_pod_keeps_copies_of_its_own_strings_and_shares_the_vocabulary():
    # A kept string taken as is would hold on to the memory of the whole decoded pod.
    full = json.loads(json.dumps(pod("app-e-driver", phase="Running", rv="19")))
    slim = slim_pod(full)
    for key in ("name", "uid", "resourceVersion"):
        assert slim["metadata"][key] == full["metadata"][key]
        assert slim["metadata"][key] is not full["metadata"][key]
    app = slim["metadata"]["labels"]["spark-app-selector"]
    assert app is not full["metadata"]["labels"]["spark-app-selector"]
    assert slim["status"]["phase"] is sys.intern("Running")


def test_slim_pods_share_the_parts_many_pods_have_alike():
    ready = [{"type": t, "status": "True"} for t in ("Initialized", "Ready", "PodScheduled")]
    first, second = (
        slim_pod(json.loads(json.dumps(pod(name, phase="Running", conditions=ready))))
        for name in ("app-1-driver", "app-2-driver")
    )
    assert first["status"]["conditions"] == ready
    assert first["status"]["conditions"] is second["status"]["conditions"]
    assert first["spec"] is second["spec"]
    unschedulable = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    third = slim_pod(pod("app-3-driver", conditions=unschedulable))
    assert third["status"]["conditions"] == unschedulable


def test_a_slim_pod_shares_the_strings_its_trigger_holds_and_its_equal_timestamps():
    # What a trigger holds (it interns its id and driver name): the pod's copies are those.
    app, driver = sys.intern("".join(["spark-", "a" * 32])), sys.intern("".join(["app-", "d"]))
    executor = pod("app-exec-1", role="executor", app=app, phase="Running")
    full = json.loads(json.dumps([pod(driver, app=app, phase="Running"), executor]))
    full[0]["status"]["startTime"] = full[0]["metadata"]["creationTimestamp"]  # the same second
    full[0]["status"]["containerStatuses"] = [
        {
            "name": "spark-kubernetes-driver",
            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
        }
    ]
    slim_driver, slim_executor = (slim_pod(p) for p in full)
    assert slim_driver["metadata"]["labels"]["spark-app-selector"] is app
    assert slim_executor["metadata"]["labels"]["spark-app-selector"] is app
    assert slim_driver["metadata"]["name"] is driver
    assert slim_executor["metadata"]["name"] == "app-exec-1"  # nobody else holds it
    created = slim_driver["metadata"]["creationTimestamp"]
    assert created == "2026-01-01T00:00:00Z"
    assert slim_driver["status"]["startTime"] is created
    running = slim_driver["status"]["containerStatuses"][0]["state"]["running"]
    assert running["startedAt"] is created
