"""`make demo`'s cluster stream names who deleted each object, not who made it (issue 29,
papercut 11): the operator deletes the driver pod, the driver its executors and its Service,
the garbage collector what the driver pod owned once it is gone."""

from __future__ import annotations

from typing import Any

from demo.__main__ import WATCHED, deleted_by, made_by, node_report


def _obj(kind: str, name: str, role: str | None = None, owned: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"spark-role": role} if role else {}}
    if owned:
        metadata["ownerReferences"] = [{"kind": "Pod", "name": "pi-driver"}]
    return {"kind": kind, "metadata": metadata}


def test_the_deleter_is_named_not_the_creator() -> None:
    service = _obj("Service", "pi-driver-svc", owned=True)
    assert made_by(service) == " (by the operator)"
    assert deleted_by(service, driver_gone=False) == " (by the driver)"
    executor = _obj("Pod", "pi-exec-1", role="executor", owned=True)
    assert deleted_by(executor, driver_gone=False) == " (by the driver)"
    assert deleted_by(_obj("Pod", "pi-driver", role="driver"), driver_gone=False) == (
        " (by the operator)"
    )
    conf_map = _obj("ConfigMap", "spark-drv-1-conf-map", owned=True)
    assert "garbage collector" in deleted_by(conf_map, driver_gone=True)
    assert "garbage collector" in deleted_by(service, driver_gone=True)


def test_the_network_policy_is_watched() -> None:
    assert ("/apis/networking.k8s.io/v1", "networkpolicies") in WATCHED


def test_the_node_report_names_each_pods_node_and_what_its_kubelet_reports() -> None:
    node = {
        "status": {"nodeInfo": {"kubeletVersion": "v9.9.9", "containerRuntimeVersion": "x://1"}}
    }
    lines = node_report({"pi-driver": "n1", "pi-exec-1": "n1"}, {"n1": node})
    assert lines[0] == "  node n1: pi-driver, pi-exec-1"
    assert "    status.nodeInfo.kubeletVersion: v9.9.9" in lines
    assert "    status.nodeInfo.containerRuntimeVersion: x://1" in lines
    assert "    status.nodeInfo.osImage: (not reported)" in lines
    assert node_report({}, {}) == ["  no pod was bound to a node"]
