"""Which pods a metadata-only resync fetches whole (`monitoring.resync`, pure)."""

from __future__ import annotations

from airflow_provider_sparkk8s.monitoring.resync import ListedVersion, listed_version, resync_plan
from airflow_provider_sparkk8s.monitoring.snapshot import Snapshot, pod_key, slim_pod
from testenv.harness.pod_builders import pod


def held(*pods):
    return Snapshot({pod_key(p): p for p in pods})


def listed(name, rv, uid=None):
    return listed_version(
        {"metadata": {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": rv}}
    )


def test_the_view_reads_a_metadata_item_and_a_whole_pod_alike():
    whole = pod("d", rv="7", uid="u-1")
    assert listed_version({"metadata": whole["metadata"]}) == ListedVersion("u-1", "d", "7")
    assert listed_version(whole) == listed_version(slim_pod(whole))


def test_unchanged_pods_keep_the_stores_own_objects_and_nothing_is_fetched():
    a, b = pod("a", rv="5", uid="uid-a"), pod("b", rv="6", uid="uid-b")
    plan = resync_plan(held(a, b), [listed("a", "5"), listed("b", "6")])
    assert plan.fetch == ()
    assert plan.kept[0] is a and plan.kept[1] is b


def test_a_newer_listed_version_and_an_unknown_pod_are_fetched():
    a = pod("a", rv="5", uid="uid-a")
    plan = resync_plan(held(a), [listed("a", "9"), listed("new", "3")])
    assert [item.name for item in plan.fetch] == ["a", "new"]
    assert plan.kept == ()


def test_a_pod_the_watch_already_took_past_the_list_is_kept():
    a = pod("a", rv="12", uid="uid-a")
    plan = resync_plan(held(a), [listed("a", "9")])
    assert plan.kept == (a,) and plan.fetch == ()


def test_a_pod_deleted_after_the_listed_version_is_neither_kept_nor_fetched():
    snapshot = Snapshot({}, {"uid-a": "15"})
    plan = resync_plan(snapshot, [listed("a", "9")])
    assert plan == resync_plan(Snapshot(), [])


def test_versions_that_are_not_numbers_or_missing_are_fetched_unless_equal():
    a = pod("a", rv="x1", uid="uid-a")
    assert resync_plan(held(a), [listed("a", "x1")]).fetch == ()
    assert [i.name for i in resync_plan(held(a), [listed("a", "x0")]).fetch] == ["a"]
    unversioned = pod("a", rv="5", uid="uid-a")
    del unversioned["metadata"]["resourceVersion"]
    assert [i.name for i in resync_plan(held(unversioned), [listed("a", "5")]).fetch] == ["a"]
    assert [i.name for i in resync_plan(held(a), [listed("a", None)]).fetch] == ["a"]
