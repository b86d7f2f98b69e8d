"""`make demo`'s cluster stream: each object with who created and who deleted it, as
kube-apiserver's audit log names them (demo/audit_trail.py), the pods' nodes as the API
server reports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from demo.__main__ import NAMESPACE, WATCHED, ClusterWatcher, node_report
from demo.audit_trail import AuditTrail, selector_takes

DRIVER_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:spark"
SUBMITTER = f"system:serviceaccount:{NAMESPACE}:airflow"
GC_AGENT = "kube-controller-manager/v1.35.4 (linux/amd64) kubernetes/abc/generic-garbage-collector"


def audit_line(
    verb: str,
    resource: str,
    name: str | None,
    user: str,
    agent: str = "x",
    code: int = 200,
    uri: str = "",
    subresource: str | None = None,
) -> str:
    ref = {"resource": resource, "namespace": NAMESPACE, "name": name, "subresource": subresource}
    event = {
        "stage": "ResponseComplete",
        "verb": verb,
        "requestURI": uri,
        "objectRef": {key: value for key, value in ref.items() if value is not None},
        "user": {"username": user},
        "userAgent": agent,
        "responseStatus": {"code": code},
    }
    return json.dumps(event) + "\n"


def pod(name: str, role: str, owner: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"spark-app-selector": "a1",
                                                         "spark-role": role}}  # fmt: skip
    if owner:
        metadata["ownerReferences"] = [{"kind": "Pod", "name": owner}]
    return {"kind": "Pod", "metadata": metadata, "spec": {"serviceAccountName": "spark"}}


EXECUTORS = (
    f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=spark-app-selector%3Da1%2C"
    "spark-role%3Dexecutor"
)
KUBELET = "system:node:real-node-0"


def test_each_object_is_named_with_who_the_audit_log_says_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "audit.log"
    log.write_text(
        audit_line("create", "pods", "pi-driver", SUBMITTER, code=201)
        + audit_line("patch", "services", "pi-svc", SUBMITTER, code=201)  # an apply that made it
        + audit_line("create", "pods", "pi-exec-1", DRIVER_ACCOUNT, code=201)
        + audit_line("create", "pods", "pi-exec-1", "admin", subresource="binding", code=201)
        + audit_line("deletecollection", "pods", None, DRIVER_ACCOUNT, uri=EXECUTORS)
        + audit_line("delete", "pods", "pi-exec-1", KUBELET)  # ends what the driver asked for
        + audit_line("delete", "pods", "pi-driver", SUBMITTER)
        + audit_line("delete", "pods", "pi-driver", KUBELET)
        + audit_line("delete", "configmaps", "pi-conf", "admin", GC_AGENT)
        + audit_line("create", "configmaps", "by-hand", "alice", code=201)
    )
    watcher = ClusterWatcher(None, AuditTrail(log))  # type: ignore[arg-type]  # no watch here
    conf_map = {"kind": "ConfigMap", "metadata": {"name": "pi-conf", "ownerReferences": [
        {"kind": "Pod", "name": "pi-driver"}]}}  # fmt: skip
    for kind, obj, plural in (
        ("ADDED", pod("pi-driver", "driver"), "pods"),
        ("ADDED", {"kind": "Service", "metadata": {"name": "pi-svc"}}, "services"),
        ("ADDED", pod("pi-exec-1", "executor", owner="pi-driver"), "pods"),
        ("DELETED", pod("pi-exec-1", "executor", owner="pi-driver"), "pods"),
        ("DELETED", pod("pi-driver", "driver"), "pods"),
        ("DELETED", conf_map, "configmaps"),
        ("ADDED", {"kind": "ConfigMap", "metadata": {"name": "by-hand"}}, "configmaps"),
    ):
        watcher._show({"type": kind, "object": obj}, plural)
    lines = [line.split(" -")[0] for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "  cluster | Pod/pi-driver created (by the operator)",
        "  cluster | Service/pi-svc created (by the operator)",
        "  cluster | Pod/pi-exec-1 created (by the driver)",
        "  cluster | Pod/pi-exec-1 deleted (by the driver)",
        "  cluster | Pod/pi-driver deleted (by the operator)",
        (
            "  cluster | ConfigMap/pi-conf deleted (by the garbage collector: its owner "
            "Pod/pi-driver is gone)"
        ),
        "  cluster | ConfigMap/by-hand created (by alice)",
    ]


def test_the_trail_reads_the_log_as_it_grows_and_names_no_one_it_lacks(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    trail = AuditTrail(log)
    assert trail.deleted("pods", NAMESPACE, "pi-driver", {}, wait=0) is None  # no file yet
    whole = audit_line("delete", "pods", "pi-driver", SUBMITTER)
    log.write_text(whole[:40])  # kube-apiserver is still writing the line
    assert trail.deleted("pods", NAMESPACE, "pi-driver", {}, wait=0) is None
    with log.open("a") as rest:
        rest.write(whole[40:] + audit_line("delete", "pods", "pi-exec-1", "bob", code=403))
        rest.write(audit_line("patch", "services", "pi-svc", "bob"))  # changed, not made
    found = trail.deleted("pods", NAMESPACE, "pi-driver", {}, wait=0)
    assert found is not None and found["user"]["username"] == SUBMITTER
    assert trail.deleted("pods", NAMESPACE, "pi-exec-1", {}, wait=0) is None  # refused
    assert trail.created("services", NAMESPACE, "pi-svc", wait=0) is None


def test_a_delete_collection_takes_what_its_selector_selects() -> None:
    labels = {"spark-app-selector": "a1", "spark-role": "executor"}
    assert selector_takes("spark-app-selector=a1,spark-role==executor", labels)
    assert selector_takes("", labels) and selector_takes("spark-role,!gone", labels)
    assert not selector_takes("spark-role!=executor", labels)
    assert not selector_takes("spark-role=driver", labels)
    assert not selector_takes("spark-role in (executor)", labels)  # not read: no claim


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


def test_the_final_xcom_is_this_runs_never_an_earlier_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `dags test` that made no run must not show the last demo's result as this one's."""
    import sqlite3

    import demo.__main__ as demo_main

    monkeypatch.setattr(demo_main, "AIRFLOW_HOME", tmp_path)
    with sqlite3.connect(tmp_path / "airflow.db") as db:
        db.execute("CREATE TABLE dag_run (id INTEGER PRIMARY KEY, dag_id TEXT, run_id TEXT)")
        db.execute("CREATE TABLE xcom (dag_id TEXT, task_id TEXT, run_id TEXT, key TEXT, value)")
        db.execute("INSERT INTO dag_run VALUES (1, 'spark_pi', 'earlier')")
        db.execute("INSERT INTO xcom VALUES ('spark_pi', 'spark_pi', 'earlier', 'k', '\"old\"')")
    before = demo_main.last_run_number()
    assert before == 1 and demo_main.final_xcoms(before) == {}
    with sqlite3.connect(tmp_path / "airflow.db") as db:
        db.execute("INSERT INTO dag_run VALUES (2, 'spark_pi', 'this')")
        db.execute("INSERT INTO xcom VALUES ('spark_pi', 'spark_pi', 'this', 'k', '\"new\"')")
    assert demo_main.final_xcoms(before) == {"k": "new"}
