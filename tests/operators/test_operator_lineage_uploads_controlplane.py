"""In a real Airflow run against the real API server: the openlineage provider's helpers
write the parent job and transport keys into the driver's `spark.properties` (the API key
nowhere else), and a relative `application` next to the DAG file is uploaded and removed with
the driver."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from testenv.harness.kube import request
from tests.operators.airflow_harness import dag_source, operator_source
from tests.operators.test_operator_controlplane import (  # noqa: F401 - pytest fixtures
    airflow_template,
    home,
    pods_of,
    task,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.airflow, pytest.mark.timeout(1500)]
API_KEY = "planted-openlineage-key-5e1f0b"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_openlineage_keys_and_a_relative_upload(home, kube_admin, namespace, tmp_path: Path):  # noqa: F811
    up = tmp_path / "up"
    jobs = home.root / "dags" / "jobs"
    jobs.mkdir()
    (jobs / "etl.py").write_text("print('etl')\n")
    tasks = operator_source(
        "lineage",
        task(
            application="local:///opt/app/etl.py",
            java_class=None,
            deferrable=False,
            on_finish_action="keep_pod",
            kwok={"run-ms": "500"},
            openlineage_inject_parent_job_info=True,
            openlineage_inject_transport_info=True,
        ),
    ) + operator_source(
        "uploaded",
        task(
            application="jobs/etl.py",
            java_class=None,
            deferrable=True,
            on_finish_action="delete_pod",
            kwok={"run-ms": "500"},
            conf={"spark.kubernetes.file.upload.path": f"file://{up}"},
        ),
    )
    home.write_dag("ol_dag", dag_source("ol_dag", tasks))
    transport = {
        "type": "http",
        "url": "http://127.0.0.1:9",
        "endpoint": "api/v1/lineage",
        "auth": {"type": "api_key", "apiKey": API_KEY},
        # Nothing listens there: without retries each event fails at once, not after about
        # 9 s of back-off (five events: 45 s of this test's 70).
        "retry": {"total": 0, "connect": 0, "read": 0},
    }
    run = home.run(
        "ol_dag",
        timeout=1200,
        extra_env={
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
            "AIRFLOW__OPENLINEAGE__NAMESPACE": "team-ns",
        },
    )
    assert run.state("lineage") == "success", run.output[-4000:]
    assert run.state("uploaded") == "success", run.output[-4000:]

    pod = pods_of(kube_admin, namespace, "ol_dag", "lineage")[0]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "spark-conf-volume-driver")
    conf_map = request(
        kube_admin,
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps/{volume['configMap']['name']}",
    )
    props = load_java_properties(conf_map["data"]["spark.properties"])
    assert props["spark.openlineage.parentJobNamespace"] == "team-ns"
    assert props["spark.openlineage.parentJobName"] == "ol_dag.lineage"
    assert UUID.fullmatch(props["spark.openlineage.parentRunId"])
    assert props["spark.openlineage.rootParentJobName"] == "ol_dag"
    assert props["spark.openlineage.transport.url"] == "http://127.0.0.1:9"
    assert props["spark.openlineage.transport.auth.apiKey"] == f"Bearer {API_KEY}"
    # The key goes to the driver, as with spark-submit, and nowhere else.
    assert API_KEY not in run.everything()

    assert "Uploaded" in run.output and "Removed the uploaded files" in run.output
    assert pods_of(kube_admin, namespace, "ol_dag", "uploaded") == []
    assert [p for p in up.rglob("*") if p.is_file()] == []
