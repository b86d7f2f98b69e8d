"""Spark's volume confs parsed into specs: the options each type requires, what 4.0 added,
the values refused before anything is created, and Spark's order for a few volumes."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.volumes import DRIVER_PREFIX, VolumeSpec, parse_volumes
from tests.support.driver_conf import make_conf

P = DRIVER_PREFIX


def parse(extra: dict[str, str], version: str = "4.3.0") -> tuple[VolumeSpec, ...]:
    return parse_volumes(make_conf(extra, version=version), DRIVER_PREFIX)


def test_a_pvc_with_its_options_labels_and_read_only_mount() -> None:
    (spec,) = parse(
        {
            P + "persistentVolumeClaim.data.mount.path": "/data",
            P + "persistentVolumeClaim.data.mount.readOnly": "true",
            P + "persistentVolumeClaim.data.options.claimName": "OnDemand",
            P + "persistentVolumeClaim.data.options.sizeLimit": "10Gi",
            P + "persistentVolumeClaim.data.label.team": "etl",
        }
    )
    assert spec == VolumeSpec(
        volume_type="persistentVolumeClaim",
        volume_name="data",
        mount_path="/data",
        mount_sub_path="",
        mount_sub_path_expr="",
        mount_read_only=True,
        options={"claimName": "OnDemand", "storageClass": None, "sizeLimit": "10Gi"},
        labels={"team": "etl"},
        annotations={},
    )


def test_host_path_type_and_sub_path_expr_exist_from_4_0_only() -> None:
    extra = {
        P + "hostPath.logs.mount.path": "/logs",
        P + "hostPath.logs.options.path": "/var/log",
        P + "hostPath.logs.options.type": "Directory",
    }
    (new,) = parse(extra)
    (old,) = parse(extra, version="3.5.6")
    assert new.options == {"path": "/var/log", "type": "Directory"}
    assert old.options == {"path": "/var/log", "type": ""}
    assert (new.mount_sub_path_expr, old.mount_sub_path_expr) == ("", None)


def test_up_to_four_volumes_keep_the_order_spark_reads_their_keys_in() -> None:
    conf = make_conf(
        {
            P + "emptyDir.b.mount.path": "/b",
            P + "nfs.a.mount.path": "/a",
            P + "nfs.a.options.path": "/export",
            P + "nfs.a.options.server": "nfs.local",
        }
    )
    first_seen = dict.fromkeys(tuple(key.split(".")[:2]) for key in conf.prefixed(P))
    specs = parse_volumes(conf, P)
    assert [(spec.volume_type, spec.volume_name) for spec in specs] == list(first_seen)
    assert {spec.volume_name: spec.options for spec in specs} == {
        "b": {"medium": None, "sizeLimit": None},
        "a": {"path": "/export", "server": "nfs.local"},
    }


@pytest.mark.parametrize(
    ("extra", "key", "accepted"),
    [
        ({P + "emptyDir.x.options.medium": "Memory"}, P + "emptyDir.x.mount.path", "a mount path"),
        ({P + "nfs.x.mount.path": "/x", P + "nfs.x.options.path": "/e"}, P + "nfs.x.options.server",
         "a value: it is required for nfs"),
        ({P + "gitRepo.x.mount.path": "/x"}, P + "gitRepo.x", "a volume type among"),
        ({P + "emptyDir.Bad_Name.mount.path": "/x"}, P + "emptyDir.Bad_Name.mount.path",
         "a volume name that is a DNS-1123 label"),
        ({P + "emptyDir.x.mount.path": "/x", P + "emptyDir.x.options.sizeLimit": "500"},
         P + "emptyDir.x.options.sizeLimit", "a Kubernetes quantity"),
        ({P + "hostPath.x.mount.path": "/x", P + "hostPath.x.options.path": "/h",
          P + "hostPath.x.options.type": "Dir"}, P + "hostPath.x.options.type", "a hostPath type"),
        ({P + "emptyDir.x.mount.path": "/x", P + "emptyDir.x.mount.subPath": "a",
          P + "emptyDir.x.mount.subPathExpr": "$(POD)"}, P + "emptyDir.x.mount.subPathExpr",
         "only one of"),
    ],
    ids=["no-mount-path", "nfs-without-server", "unknown-type", "bad-name", "size-without-units",
         "bad-host-path-type", "sub-path-and-expr"],
)  # fmt: skip
def test_invalid_volumes_name_the_key(extra: dict[str, str], key: str, accepted: str) -> None:
    with pytest.raises(SparkConfError) as raised:
        parse(extra)
    assert raised.value.key == key
    assert raised.value.accepted.startswith(accepted)


def test_a_bare_size_is_a_quantity_before_spark_4() -> None:
    (spec,) = parse(
        {P + "emptyDir.x.mount.path": "/x", P + "emptyDir.x.options.sizeLimit": "500"}, "3.5.6"
    )
    assert spec.options == {"medium": None, "sizeLimit": "500"}
