"""The event log and the run summary on a real Spark run, 4.3.0 and 3.5.9 (each line's own
History Server reading its driver's log): the operator (waiting in the worker) submits
with `event_log_dir` into a host folder that the real node's driver writes (a hostPath
volume) and a real History Server (testenv/history_server.py) reads; after the end, the operator's
summary (task log table, XCom `run_summary`) holds what the History Server's REST API
reports for the same application, read here on our own.

The program makes every figure something: a shuffle, a task that fails once and is retried,
a job that fails, a skewed stage, a text file written and read back.

Then the driver is gone (deleted at the end), and the same Spark UI link, through the
plugin's app with the task's real connection, serves the application from that History
Server: the API server's 404 for the pod sends the browser to the application's page
there, whose links are under the task instance's base, and the REST API under the base is
the History Server's."""

from __future__ import annotations

import json
import secrets
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget, TaskInstanceUi
from airflow_provider_sparkk8s.application.ui.spark_ui_access import TaskDefinition
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.fakes import FakeTaskInstance
from testenv.harness.waiting import wait_for
from testenv.history_server import HistoryServer
from testenv.real_spark import (
    BASE_CONF,
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    SUBMITTER,
    host_folder_conf,
)
from testenv.realnode.node import RealNode
from testenv.runtime_image import image_name

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

PROGRAM = """\
import sys
import time

from pyspark import SparkContext, TaskContext

out = sys.argv[1]


def flaky(x):
    context = TaskContext.get()
    if context.partitionId() == 0 and context.attemptNumber() == 0:
        raise RuntimeError("the first attempt of partition 0 fails")
    return x


def skewed(index, rows):
    if index == 0:
        time.sleep(3)
    return rows


sc = SparkContext.getOrCreate()
try:
    words = sc.parallelize([f"w{i % 50}" for i in range(20000)], 4)
    print("words:", len(words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b, 3).collect()))
    print("retried:", sc.parallelize(range(4), 4).map(flaky).count())
    print("skewed:", sc.parallelize(range(8), 4).mapPartitionsWithIndex(skewed).count())
    try:
        sc.parallelize(range(2), 2).map(lambda x: 1 // 0).count()
    except Exception:
        print("the failing job failed")
    sc.parallelize(range(1000), 2).map(str).saveAsTextFile(out)
    print("read back:", sc.textFile(out).count())
finally:
    sc.stop()
"""


# The Spark lines whose event log a History Server of the same line reads here: 4.x writes
# it compressed (zstd) by default, 3.5 plain.
VERSIONS = ["4.3.0", "3.5.9"]


@pytest.fixture
def history(real_shared_dir: Path, version: str) -> Iterator[HistoryServer]:
    events = real_shared_dir / "events"
    events.mkdir()
    events.chmod(0o777)  # the driver writes it as the image's user 185
    with HistoryServer(events, spark_version=version) as server:
        yield server


def rest_figures(history: HistoryServer, app_id: str) -> dict[str, Any]:
    """The figures as the History Server's REST API gives them, read here on our own."""
    app = history.api(f"applications/{app_id}")
    jobs = history.api(f"applications/{app_id}/jobs")
    stages = history.api(f"applications/{app_id}/stages")
    ran = [s for s in stages if s["status"] != "SKIPPED"]
    return {
        "duration_ms": app["attempts"][-1]["duration"],
        "jobs": len(jobs),
        "failed_jobs": len([j for j in jobs if j["status"] == "FAILED"]),
        "stages": len(ran),
        "failed_stages": len([s for s in ran if s["status"] == "FAILED"]),
        "failed_tasks": sum(s["numFailedTasks"] for s in ran),
        "tasks": sum(s["numCompleteTasks"] for s in ran),
        "input_bytes": sum(s["inputBytes"] for s in ran),
        "output_bytes": sum(s["outputBytes"] for s in ran),
        "shuffle_read_bytes": sum(s["shuffleReadBytes"] for s in ran),
        "shuffle_write_bytes": sum(s["shuffleWriteBytes"] for s in ran),
        "memory_spilled_bytes": sum(s["memoryBytesSpilled"] for s in ran),
        "disk_spilled_bytes": sum(s["diskBytesSpilled"] for s in ran),
        "gc_time_ms": sum(s["jvmGcTime"] for s in ran),
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_the_run_summary_holds_what_the_history_servers_rest_api_reports(
    version: str,
    real_node: RealNode,
    real_plane: ControlPlane,
    real_namespace: str,
    real_submitter: Path,
    real_shared_dir: Path,
    history: HistoryServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    shared_dir = real_shared_dir
    real_node.ensure_spark_image(version)  # imported in the background, or now
    conn_id = f"spark_k8s_history_{secrets.token_hex(4)}"
    extra = {"kube_config_path": str(real_submitter), "history_server_url": history.url}
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark_k8s", "extra": extra})
    )
    program = tmp_path / "summary.py"
    program.write_text(PROGRAM)
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        "spark.kubernetes.container.image": image_name(version),
        "spark.executor.instances": "1",
        "spark.task.maxFailures": "2",  # the failing job gives up after two attempts
        "spark.kubernetes.file.upload.path": f"file://{shared_dir}",
        # The driver writes its event log and, with its executor, the output there.
        **host_folder_conf(shared_dir),
    }
    operator = SparkK8sSubmitOperator(
        task_id="summary",
        application=str(program),
        application_args=[f"file://{shared_dir}/out"],
        conf=conf,
        namespace=real_namespace,
        kubernetes_conn_id=conn_id,
        spark_version=version,
        event_log_dir=f"file:{history.log_dir}",
        event_log_rolling_max_file_size="10m",
        deferrable=False,
        poll_interval=1.0,
        startup_timeout=300,
        on_finish_action="delete_pod",
        log_tail_lines=2000,  # a failed run's whole driver log in the report
    )
    ti = FakeTaskInstance(task_id="summary")
    started = time.monotonic()
    result = operator.execute({"ti": ti})
    REAL_SPARK_TIMINGS[f"run summary {version}: operator execute (submit to summary)"] = (
        time.monotonic() - started
    )
    log = "".join(capfd.readouterr())
    assert result["state"] == "succeeded", log[-4000:]
    app_id = result["application_id"]

    # The driver wrote its rolling event log where the operator said, and the server read it.
    written = sorted(p.relative_to(history.log_dir) for p in history.log_dir.rglob("*"))
    print("event log:", [str(p) for p in written])
    assert any(app_id in str(p) and len(p.parts) == 2 for p in written), written
    assert "run_summary" in ti.xcom, log[-3000:]
    summary = ti.xcom["run_summary"]
    expected = rest_figures(history, app_id)
    assert {key: summary[key] for key in expected} == expected
    # The program made each figure something (so an empty summary cannot pass).
    assert summary["failed_jobs"] == 1 and summary["failed_tasks"] >= 2
    assert summary["shuffle_read_bytes"] > 0 and summary["output_bytes"] > 0
    assert summary["input_bytes"] > 0 and summary["executors"] >= 1

    # The slowest stage and its skew, against its own task list.
    slowest = summary["slowest_stage"]
    stage = f"applications/{app_id}/stages/{slowest['stage_id']}/{slowest['attempt_id']}"
    tasks = history.api(f"{stage}/taskList?length=1000")
    durations = [t["duration"] for t in tasks if t["status"] == "SUCCESS"]
    assert slowest["max_task_ms"] == max(durations)
    assert slowest["median_task_ms"] == statistics.median_low(durations) or slowest[
        "median_task_ms"
    ] == statistics.median_high(durations)
    walls = [
        (s["stageId"], s["attemptId"])
        for s in history.api(f"applications/{app_id}/stages")
        if s["status"] in ("COMPLETE", "FAILED")
    ]
    assert (slowest["stage_id"], slowest["attempt_id"]) in walls
    assert f"Run summary of {app_id}" in log and "slowest stage" in log
    print(log[log.index("Run summary of") :].split("\n\n")[0][:1500])
    grant_pod_proxy(real_plane, real_namespace)
    check_the_link_serves_the_history(history, ti, app_id)


def grant_pod_proxy(plane: ControlPlane, namespace: str) -> None:
    """The api-server's connection's one extra right (docs/spark_ui.md): `get` on pods/proxy,
    granted to the submitter's identity here, as a platform team would."""
    admin = AdminHttp.from_kubeconfig(plane.admin_kubeconfig)
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    name = {"name": "spark-ui-proxy", "namespace": namespace}
    rule = {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]}
    admin.json("POST", f"{rbac}/roles", {"kind": "Role", "metadata": name, "rules": [rule]})
    admin.json("POST", f"{rbac}/rolebindings", {
        "kind": "RoleBinding",
        "metadata": name,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "spark-ui-proxy"},
        "subjects": [{"kind": "ServiceAccount", "name": SUBMITTER, "namespace": namespace}],
    })  # fmt: skip


def check_the_link_serves_the_history(
    history: HistoryServer, ti: FakeTaskInstance, app_id: str
) -> None:
    # Imported here: the plugin's module loads the api-server's own parts, which the
    # operator's run above (a worker's) must not have loaded.
    from airflow_provider_sparkk8s.plugins import spark_ui as plugin

    target = SparkUiTarget.from_xcom(ti.xcom["spark_ui"])
    assert target is not None
    app = plugin.build_app(read_check=lambda: None)  # Airflow's check: tests/plugins
    app.dependency_overrides[plugin.published_target] = lambda: target
    # The task's serialized definition (tests/plugins read a real one): its connection.
    definition = {"kubernetes_conn_id": target.conn_id, "namespace": target.namespace}
    app.state.definition_for = lambda *ids: TaskDefinition(definition)
    app.state.application_id_for = lambda *ids: ti.xcom["spark_application"]["application_id"]
    root = FastAPI()
    root.mount("/sparkk8s", app)
    base = TaskInstanceUi(ti.dag_id, ti.run_id, ti.task_id, ti.map_index).base
    with TestClient(root) as client:
        answers: list[Any] = []

        def granted() -> bool:  # RBAC's informer takes the new binding in a moment
            answers.append(client.get(base + "/jobs/", follow_redirects=False))
            return bool(answers[-1].status_code != 403)

        wait_for(granted, 30, "the pods/proxy grant to count")
        first = answers[-1]
        assert first.status_code == 302, first.text[:500]
        assert first.headers["location"] == f"{base}/history/{app_id}/jobs/"
        page = client.get(first.headers["location"], follow_redirects=False)
        assert page.status_code == 200, page.text[:500]
        assert f"{base}/static/" in page.text, page.text[:2000]
        assert f"{base}/history/{app_id}/stages/" in page.text, page.text[:2000]
        # HEAD answers as GET does, without a body (the pod's 404 asked again as a GET).
        head = client.head(base + "/jobs/", follow_redirects=False)
        assert head.status_code == 302 and head.content == b"", head
        assert head.headers["location"] == first.headers["location"]
        head = client.head(first.headers["location"])
        assert head.status_code == 200 and head.content == b"", head
        jobs = client.get(f"{base}/api/v1/applications/{app_id}/jobs")
        assert jobs.status_code == 200 and jobs.json() == history.api(f"applications/{app_id}/jobs")
