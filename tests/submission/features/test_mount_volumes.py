import copy

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import mount_volumes
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, PREFIX, make_conf

D = "spark.kubernetes.driver.volumes."


def run(extra, version="4.3.0", pod=None):
    return mount_volumes.step(make_conf(extra, version=version), pod or SparkPod.initial())


def test_host_path_volume_and_mount_on_4x():
    result = run(
        {D + "hostPath.data.mount.path": "/data", D + "hostPath.data.options.path": "/mnt/d"}
    )
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "data", "hostPath": {"path": "/mnt/d", "type": ""}}
    ]
    assert result.pod.container["volumeMounts"] == [
        {"name": "data", "mountPath": "/data", "readOnly": False, "subPath": "", "subPathExpr": ""}
    ]
    assert list(result.resources) == [] and dict(result.system_properties) == {}


def test_host_path_type_and_sub_path_expr_exist_from_4_0_only():
    extra = {
        D + "hostPath.data.mount.path": "/data",
        D + "hostPath.data.options.path": "/mnt/d",
        D + "hostPath.data.options.type": "DirectoryOrCreate",
        D + "hostPath.data.mount.subPathExpr": "$(POD_NAME)",
    }
    new = run(extra, "4.0.5")
    assert new.pod.pod["spec"]["volumes"][0]["hostPath"] == {
        "path": "/mnt/d",
        "type": "DirectoryOrCreate",
    }
    assert new.pod.container["volumeMounts"][0]["subPathExpr"] == "$(POD_NAME)"
    old = run(extra, "3.5.9")
    assert old.pod.pod["spec"]["volumes"][0]["hostPath"] == {"path": "/mnt/d", "type": ""}
    assert old.pod.container["volumeMounts"] == [
        {"name": "data", "mountPath": "/data", "readOnly": False, "subPath": ""}
    ]


def test_empty_dir_medium_and_size_limit():
    result = run(
        {
            D + "emptyDir.scratch.mount.path": "/scratch",
            D + "emptyDir.scratch.options.medium": "Memory",
            D + "emptyDir.scratch.options.sizeLimit": "500Mi",
            D + "emptyDir.plain.mount.path": "/plain",
            D + "emptyDir.plain.mount.subPath": "sub",
        }
    )
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "500Mi"}},
        {"name": "plain", "emptyDir": {"medium": ""}},
    ]
    assert result.pod.container["volumeMounts"][1] == {
        "name": "plain",
        "mountPath": "/plain",
        "readOnly": False,
        "subPath": "sub",
        "subPathExpr": "",
    }


def test_nfs_read_only():
    result = run(
        {
            D + "nfs.share.mount.path": "/share",
            D + "nfs.share.mount.readOnly": "TRUE",
            D + "nfs.share.options.path": "/exports/a",
            D + "nfs.share.options.server": "nfs.example.internal",
        }
    )
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "share", "nfs": {"path": "/exports/a", "server": "nfs.example.internal"}}
    ]
    assert result.pod.container["volumeMounts"][0]["readOnly"] is True


def test_existing_claim_is_mounted_and_not_created():
    result = run(
        {
            D + "persistentVolumeClaim.data.mount.path": "/data",
            D + "persistentVolumeClaim.data.mount.readOnly": "true",
            D + "persistentVolumeClaim.data.options.claimName": "shared-claim",
        }
    )
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "shared-claim", "readOnly": True}}
    ]
    assert list(result.resources) == []


ON_DEMAND = {
    D + "emptyDir.first.mount.path": "/first",
    D + "persistentVolumeClaim.data.mount.path": "/data",
    D + "persistentVolumeClaim.data.options.claimName": "OnDemand",
    D + "persistentVolumeClaim.data.options.storageClass": "fast",
    D + "persistentVolumeClaim.data.options.sizeLimit": "10Gi",
}


@pytest.mark.parametrize(
    ("version", "extra", "mode"),
    [
        ("4.3.0", {}, "ReadWriteOncePod"),
        ("4.0.5", {}, "ReadWriteOncePod"),
        ("3.5.9", {}, "ReadWriteOnce"),
        ("4.3.0", {"spark.kubernetes.legacy.useReadWriteOnceAccessMode": "true"}, "ReadWriteOnce"),
        (
            "3.5.9",
            {"spark.kubernetes.legacy.useReadWriteOnceAccessMode": "false"},
            "ReadWriteOncePod",
        ),
    ],
)
def test_on_demand_claim_is_named_by_index_and_created_with_the_version_access_mode(
    version, extra, mode
):
    result = run({**ON_DEMAND, **extra}, version)
    # The index is the volume's position in Spark's (hash) order of the volume specs.
    index = [v["name"] for v in result.pod.pod["spec"]["volumes"]].index("data")
    claim = f"{PREFIX}-driver-pvc-{index}"
    assert result.pod.pod["spec"]["volumes"][index] == {
        "name": "data",
        "persistentVolumeClaim": {"claimName": claim, "readOnly": False},
    }
    assert list(result.resources) == [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "labels": {"spark-app-selector": APP_ID}},
            "spec": {
                "storageClassName": "fast",
                "accessModes": [mode],
                "resources": {"requests": {"storage": "10Gi"}},
            },
        }
    ]


def test_claim_labels_and_annotations_from_4_0_with_spark_label_winning():
    extra = {
        **ON_DEMAND,
        D + "persistentVolumeClaim.data.label.team": "etl",
        D + "persistentVolumeClaim.data.label.spark-app-selector": "mine",
        D + "persistentVolumeClaim.data.annotation.backup": "daily",
    }
    metadata = run(extra, "4.3.0").resources[0]["metadata"]
    assert metadata["labels"] == {"team": "etl", "spark-app-selector": APP_ID}
    assert list(metadata["labels"]) == ["team", "spark-app-selector"]
    assert metadata["annotations"] == {"backup": "daily"}
    old = run(extra, "3.5.9").resources[0]["metadata"]
    assert old["labels"] == {"spark-app-selector": APP_ID} and "annotations" not in old


def test_claim_name_with_on_demand_inside_and_no_storage_class_is_renamed_not_created():
    result = run(
        {
            D + "persistentVolumeClaim.data.mount.path": "/data",
            D + "persistentVolumeClaim.data.options.claimName": "cache-OnDemand",
            D + "persistentVolumeClaim.data.options.sizeLimit": "1Gi",
        }
    )
    source = result.pod.pod["spec"]["volumes"][0]["persistentVolumeClaim"]
    assert source["claimName"] == f"cache-{PREFIX}-driver-pvc-0"
    assert list(result.resources) == []


def test_volumes_follow_template_volumes_and_inputs_are_not_mutated():
    pod = SparkPod(
        pod={"metadata": {}, "spec": {"volumes": [{"name": "tpl", "emptyDir": {}}]}},
        container={"volumeMounts": [{"name": "tpl", "mountPath": "/tpl"}]},
    )
    conf = make_conf({D + "emptyDir.e.mount.path": "/e"})
    pod_before, conf_before = copy.deepcopy(pod), copy.deepcopy(dict(conf.spark_conf))
    result = mount_volumes.step(conf, pod)
    assert [v["name"] for v in result.pod.pod["spec"]["volumes"]] == ["tpl", "e"]
    assert [m["name"] for m in result.pod.container["volumeMounts"]] == ["tpl", "e"]
    assert pod == pod_before and dict(conf.spark_conf) == conf_before


def test_executor_keys_are_checked_but_not_mounted_on_the_driver():
    ok = run({"spark.kubernetes.executor.volumes.emptyDir.x.mount.path": "/x"})
    assert ok.pod == SparkPod.initial()
    with pytest.raises(SparkConfError) as err:
        run({"spark.kubernetes.executor.volumes.hostPath.x.mount.path": "/x"})
    assert err.value.key == "spark.kubernetes.executor.volumes.hostPath.x.options.path"


@pytest.mark.parametrize(
    ("extra", "key", "value"),
    [
        ({D + "configMap.c.mount.path": "/c"}, D + "configMap.c", "configMap"),
        ({D + "emptyDir.e.mount.readOnly": "true"}, D + "emptyDir.e.mount.path", None),
        ({D + "hostPath.h.mount.path": "/h"}, D + "hostPath.h.options.path", None),
        (
            {D + "persistentVolumeClaim.p.mount.path": "/p"},
            D + "persistentVolumeClaim.p.options.claimName",
            None,
        ),
        (
            {D + "nfs.n.mount.path": "/n", D + "nfs.n.options.path": "/e"},
            D + "nfs.n.options.server",
            None,
        ),
        (
            {D + "nfs.n.mount.path": "/n", D + "nfs.n.options.server": "s"},
            D + "nfs.n.options.path",
            None,
        ),
        (
            {
                D + "emptyDir.e.mount.path": "/e",
                D + "emptyDir.e.mount.subPath": "a",
                D + "emptyDir.e.mount.subPathExpr": "b",
            },
            D + "emptyDir.e.mount.subPathExpr",
            "b",
        ),
        (
            {D + "emptyDir.e.mount.path": "/e", D + "emptyDir.e.mount.readOnly": "yes"},
            D + "emptyDir.e.mount.readOnly",
            "yes",
        ),
        (
            {D + "emptyDir.e.mount.path": "/e", D + "emptyDir.e.mount.readOnly": " true"},
            D + "emptyDir.e.mount.readOnly",
            " true",
        ),
        (
            {D + "emptyDir.e.mount.path": "/e", D + "emptyDir.e.options.sizeLimit": "500"},
            D + "emptyDir.e.options.sizeLimit",
            "500",
        ),
        (
            {D + "emptyDir.e.mount.path": "/e", D + "emptyDir.e.options.sizeLimit": ""},
            D + "emptyDir.e.options.sizeLimit",
            "",
        ),
        (
            {D + "emptyDir.e.mount.path": "/e", D + "emptyDir.e.options.sizeLimit": "ten gigs"},
            D + "emptyDir.e.options.sizeLimit",
            "ten gigs",
        ),
        (
            {
                D + "persistentVolumeClaim.p.mount.path": "/p",
                D + "persistentVolumeClaim.p.options.claimName": "c",
                D + "persistentVolumeClaim.p.options.sizeLimit": "1023",
            },
            D + "persistentVolumeClaim.p.options.sizeLimit",
            "1023",
        ),
        (
            {
                D + "hostPath.h.mount.path": "/h",
                D + "hostPath.h.options.path": "/x",
                D + "hostPath.h.options.type": "Folder",
            },
            D + "hostPath.h.options.type",
            "Folder",
        ),
        (
            {D + "emptyDir.Bad_Name.mount.path": "/e"},
            D + "emptyDir.Bad_Name.mount.path",
            "Bad_Name",
        ),
        ({D + "emptyDir.e.mount.path": ""}, D + "emptyDir.e.mount.path", ""),
        (
            {
                D + "persistentVolumeClaim.p.mount.path": "/p",
                D + "persistentVolumeClaim.p.options.claimName": "Not_A_Name",
            },
            D + "persistentVolumeClaim.p.options.claimName",
            "Not_A_Name",
        ),
        (
            {
                D + "persistentVolumeClaim.p.mount.path": "/p",
                D + "persistentVolumeClaim.p.options.claimName": "OnDemand",
                D + "persistentVolumeClaim.p.label.bad key": "v",
            },
            D + "persistentVolumeClaim.p.label.bad key",
            "bad key",
        ),
    ],
)
def test_invalid_volume_confs_name_the_key_and_value(extra, key, value):
    with pytest.raises(SparkConfError) as err:
        run(extra)
    assert err.value.key == key
    assert err.value.value == value


def test_sub_path_and_sub_path_expr_together_are_fine_on_3_5_which_ignores_the_expr():
    extra = {
        D + "emptyDir.e.mount.path": "/e",
        D + "emptyDir.e.mount.subPath": "a",
        D + "emptyDir.e.mount.subPathExpr": "b",
    }
    assert run(extra, "3.5.9").pod.container["volumeMounts"][0]["subPath"] == "a"


def test_duplicate_mount_paths_and_volume_names_are_refused():
    with pytest.raises(SparkConfError, match="'/same'"):
        run({D + "emptyDir.a.mount.path": "/same", D + "emptyDir.b.mount.path": "/same"})
    with pytest.raises(SparkConfError, match="already in the pod"):
        run(
            {
                D + "emptyDir.a.mount.path": "/a",
                D + "hostPath.a.mount.path": "/b",
                D + "hostPath.a.options.path": "/x",
            }
        )
    template = SparkPod(pod={"spec": {"volumes": [{"name": "a", "emptyDir": {}}]}}, container={})
    with pytest.raises(SparkConfError, match="already in the pod"):
        run({D + "emptyDir.a.mount.path": "/a"}, pod=template)
    mounted = SparkPod(
        pod={"spec": {}}, container={"volumeMounts": [{"name": "s", "mountPath": "/a"}]}
    )
    with pytest.raises(SparkConfError) as err:
        run({D + "emptyDir.b.mount.path": "/a"}, pod=mounted)
    assert err.value.key == D + "emptyDir.b.mount.path" and err.value.value == "/a"


def test_sizes_with_units_and_big_plain_byte_counts_are_accepted():
    result = run(
        {
            D + "emptyDir.a.mount.path": "/a",
            D + "emptyDir.a.options.sizeLimit": "2048",
            D + "emptyDir.b.mount.path": "/b",
            D + "emptyDir.b.options.sizeLimit": "1.5G",
        }
    )
    sizes = {v["name"]: v["emptyDir"]["sizeLimit"] for v in result.pod.pod["spec"]["volumes"]}
    assert sizes == {"a": "2048", "b": "1.5G"}


def test_spark_3_5_has_no_missing_units_check():
    extra = {D + "emptyDir.e.mount.path": "/e", D + "emptyDir.e.options.sizeLimit": "500"}
    assert run(extra, "3.5.9").pod.pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "500"
    with pytest.raises(SparkConfError):
        run(extra, "4.0.5")


MIXED = {
    D + "hostPath.h1.mount.path": "/h1",
    D + "hostPath.h1.options.path": "/x1",
    D + "hostPath.h2.mount.path": "/h2",
    D + "hostPath.h2.options.path": "/x2",
    D + "hostPath.h2.mount.readOnly": "true",
    D + "nfs.n1.mount.path": "/n1",
    D + "nfs.n1.options.path": "/e",
    D + "nfs.n1.options.server": "srv",
    D + "persistentVolumeClaim.p1.mount.path": "/p1",
    D + "persistentVolumeClaim.p1.options.claimName": "OnDemand",
    D + "persistentVolumeClaim.p1.options.storageClass": "std",
    D + "persistentVolumeClaim.p1.options.sizeLimit": "1Gi",
    D + "persistentVolumeClaim.p1.label.team": "a",
    D + "persistentVolumeClaim.p1.annotation.note": "b",
    D + "persistentVolumeClaim.p2.mount.path": "/p2",
    D + "persistentVolumeClaim.p2.options.claimName": "existing",
    D + "emptyDir.e1.mount.path": "/e1",
    D + "emptyDir.e1.mount.subPath": "sp",
    D + "emptyDir.e1.options.medium": "Memory",
    D + "emptyDir.e2.mount.path": "/e2",
    D + "emptyDir.e2.options.sizeLimit": "5Gi",
}


@pytest.mark.parametrize(
    ("version", "order"),
    [
        # Orders spark-submit 4.3.0 and 3.5.9 sent for this conf (a HashSet of volume specs).
        ("4.3.0", ["n1", "p1", "p2", "e1", "h1", "e2", "h2"]),
        ("3.5.9", ["e2", "p2", "h1", "n1", "h2", "e1", "p1"]),
    ],
)
def test_more_than_four_volumes_come_in_spark_s_hash_set_order(version, order):
    result = run(MIXED, version)
    assert [v["name"] for v in result.pod.pod["spec"]["volumes"]] == order
    assert [m["name"] for m in result.pod.container["volumeMounts"]] == order
    # The on-demand claim is numbered by its position in that order.
    assert result.resources[0]["metadata"]["name"] == f"{PREFIX}-driver-pvc-{order.index('p1')}"
