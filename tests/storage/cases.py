"""What the gs:// and abfs:// upload tests share: the local app, the CLI's argv, the
submission refused at the pod or at its ConfigMap, and the operator's driver removed with
its uploads on a real API server (KWOK)."""

from __future__ import annotations

import asyncio
import io
import json
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import SubmissionError
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from airflow_provider_sparkk8s.version_compat import TaskDeferred
from testenv.fakes import FakeTaskInstance
from testenv.harness.pods import get_pod, wait_for_pod_gone
from testenv.harness.recorder import InjectedFailure, RecordingServer
from tests.support.kills import answered

UPLOAD_PATH_KEY = "spark.kubernetes.file.upload.path"
# The driver pod refused (the first request after the uploads), or its ConfigMap refused
# once the pod exists (applied after it, as Spark creates it; the pod is deleted again).
REFUSALS = [("POST", "/pods$"), ("PATCH", "/configmaps/")]


def local_app(tmp_path: Path) -> dict[str, bytes]:
    contents = {
        "etl.py": b"from helpers import greet\nprint(greet('store'))\n",
        "helpers.py": b"def greet(name):\n    return 'hello ' + name\n",
        "env.tar.gz": secrets.token_bytes(300_000),  # binary, and more than one read buffer
    }
    for name, content in contents.items():
        (tmp_path / name).write_bytes(content)
    return contents


def argv(
    server: RecordingServer, tmp_path: Path, upload_path: str, conf: dict[str, str]
) -> list[str]:
    pairs = {"spark.kubernetes.file.upload.path": upload_path, **conf}
    return [
        "--master", f"k8s://{server.url}", "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.0",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        *[arg for key, value in pairs.items() for arg in ("--conf", f"{key}={value}")],
        "--py-files", str(tmp_path / "helpers.py"),
        "--archives", f"{tmp_path}/env.tar.gz#env",
        str(tmp_path / "etl.py"),
    ]  # fmt: skip


def properties(recorded: list[dict]) -> dict[str, str]:
    conf_map = next(r["body"] for r in recorded if (r["body"] or {}).get("kind") == "ConfigMap")
    return load_java_properties(conf_map["data"]["spark.properties"])


def submit_and_check_uploads(
    tmp_path: Path,
    upload_path: str,
    conf: dict[str, str],
    objects: Callable[[], dict[str, bytes]],
    secret: str | None = None,
) -> dict[str, str]:
    """sparkk8s-submit against a recording API server: every file is in the store byte for
    byte before the first request, under the upload path; the properties name the uploads
    with the upload path's own scheme. Returns the properties."""
    contents = local_app(tmp_path)
    with RecordingServer() as api:
        first_request_saw: list[dict[str, bytes]] = []
        respond = api.respond

        def look_then_respond(method, path, body):  # type: ignore[no-untyped-def]
            first_request_saw.append(objects())
            return respond(method, path, body)

        api.respond = look_then_respond  # type: ignore[method-assign]
        out, err = io.StringIO(), io.StringIO()
        code = run(argv(api, tmp_path, upload_path, conf), environ={}, out=out, err=err).exit_code
        recorded = api.recording.as_list()
    assert code == 0, err.getvalue()
    stored = objects()
    assert first_request_saw[0] == stored  # everything was there before the first request
    by_name = {key.rsplit("/", 1)[1]: key for key in stored}
    assert sorted(by_name) == sorted(contents)
    prefix = re.sub(r"^[a-z]+://[^/]+/", "", upload_path) + "/spark-upload-"
    for name, key in by_name.items():
        assert stored[key] == contents[name], name  # byte for byte
        assert key.startswith(prefix), key
    props = properties(recorded)
    folder_of = {name: key[len(prefix) - len("spark-upload-") :] for name, key in by_name.items()}
    assert props["spark.submit.pyFiles"] == f"{upload_path}/{folder_of['helpers.py']}"
    assert props["spark.archives"] == f"{upload_path}/{folder_of['env.tar.gz']}#env"
    pod = next(r["body"] for r in recorded if (r["body"] or {}).get("kind") == "Pod")
    assert pod["spec"]["containers"][-1]["args"][-1] == f"{upload_path}/{folder_of['etl.py']}"
    if secret is not None:
        assert secret not in json.dumps(recorded)  # no request carried it: pod, ConfigMap
        assert secret not in out.getvalue() + err.getvalue()
    return props


def refused_submission_leaves_nothing(
    tmp_path: Path,
    upload_path: str,
    conf: dict[str, str],
    refusal: tuple[str, str],
    objects: Callable[[], dict[str, bytes]],
    secret: str | None = None,
) -> None:
    method, refused = refusal
    local_app(tmp_path)
    with RecordingServer() as api:
        api.fail(InjectedFailure(method, refused, 403))
        with pytest.raises(SubmissionError) as error:
            run(
                argv(api, tmp_path, upload_path, conf),
                environ={},
                out=io.StringIO(),
                err=io.StringIO(),
            )
        recorded = [(r["method"], r["path"]) for r in api.recording.as_list()]
    assert any(m == method and re.search(refused, path) for m, path in recorded)
    if method == "PATCH":
        assert any(m == "POST" and path.endswith("/pods") for m, path in recorded)
        assert any(m == "DELETE" and "/pods/" in path for m, path in recorded)
    assert objects() == {}
    assert secret is None or secret not in str(error.value)


def operator_upload_goes_with_the_driver(
    tmp_path: Path,
    conn_id: str,
    namespace: str,
    kube_admin: Any,
    conf: dict[str, str],
    objects: Callable[[], dict[str, bytes]],
    secret: str | None = None,
) -> None:
    """The operator uploads the main file and `files`, submits one driver to the real API
    server and defers; the trigger's kill (as a user's "mark failed" runs it) deletes the
    driver and, reading the folders from its ConfigMap, the uploads. The secret is in no
    trigger kwarg and no XCom."""
    from airflow.sdk import DAG

    from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator

    job = tmp_path / "dags"
    job.mkdir()
    (job / "etl.py").write_text("print('etl')\n")
    (job / "words.txt").write_text("uploaded\n")
    ti = FakeTaskInstance(task_id="store_kill")
    with DAG(ti.dag_id, schedule=None) as dag:
        operator = SparkK8sSubmitOperator(
            task_id=ti.task_id,
            application="etl.py",
            files="words.txt",
            image="apache/spark:4.3.0",
            kubernetes_conn_id=conn_id,
            deferrable=True,
            conf=conf,
        )
    dag.fileloc = str(job / "dag.py")
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    trigger = deferred.value.trigger
    pod = trigger.driver_pod_name
    assert get_pod(kube_admin, namespace, pod) is not None
    folders = {key.split("/")[1] for key in objects()}
    assert len(folders) == 2 and all(f.startswith("spark-upload-") for f in folders), folders
    _, kwargs = trigger.serialize()
    if secret is not None:
        assert secret not in json.dumps(kwargs, default=str)
        assert secret not in json.dumps(ti.xcom, default=str)
    asyncio.run(answered(trigger).on_kill())
    wait_for_pod_gone(kube_admin, namespace, pod)
    assert objects() == {}
