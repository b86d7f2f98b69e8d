"""Real Spark reads what the operator uploaded to S3: the operator (worker-side wait, an `aws`
Airflow connection for its own uploads) puts the main `.py`, `--py-files`, `--files`,
`--archives` and `--jars` into a versitygw bucket under `spark.kubernetes.file.upload.path=
s3a://...`; pyspark 4.3.0's driver, in a pod of the node agent, downloads them through the
image's S3A connector (testenv/fetch_hadoop_aws.sh) with the `spark.hadoop.fs.s3a.*` options
it was given (loopback endpoint, path-style access, region) and credentials from a
Kubernetes Secret through `spark.kubernetes.{driver,executor}.secretKeyRef.*`. Its executor
imports the module, reads the `--files` text and the unpacked archive it fetched from the
driver, and reads the uploaded text itself straight from the bucket with its own S3A client
and the Secret's credentials. Each partition's line names the executor pod it ran on. The
uploads go with the driver, and the credentials appear in no spark.properties, pod, task
log or XCom."""

from __future__ import annotations

import base64
import json
import secrets
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import pytest

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.submission.arguments import load_java_properties
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.s3server import S3Server
from tests.operators.fakes import FakeTaskInstance
from tests.support.real_spark import BASE_CONF, REAL_SPARK_TIMINGS
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

SECRET = "s3-credentials"
S3A = "spark.hadoop.fs.s3a."
# The driver greets with the uploaded module and checks the uploaded jar is on its class
# path; each partition, on the executor, greets with the module, the --files text and the
# unpacked archive it fetched from the driver, and shows what it read from the bucket.
PROGRAM = """\
import os
import socket
import sys

from pyspark import SparkContext, SparkFiles

from helpers import greet


def on_executor(index, rows):
    from helpers import greet

    with open(SparkFiles.get("words.txt")) as handle:
        word = handle.read().strip()
    with open(os.path.join(SparkFiles.getRootDirectory(), "env", "greeting.txt")) as handle:
        archived = handle.read().strip()
    read = ",".join(rows)
    host = socket.gethostname()
    yield f"partition {index}: {greet(word)} archive={archived} s3a=[{read}] on {host}"


marker, uploaded_words = sys.argv[1], sys.argv[2]
print("driver: " + greet(marker), flush=True)
sc = SparkContext.getOrCreate()
try:
    loader = sc._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    found = loader.getResource("sparkk8s-marker.txt") is not None
    print("driver jar resource: " + str(found), flush=True)
    print("driver jars: " + str(sc._jsc.sc().listJars()), flush=True)
    lines = sc.textFile(uploaded_words, 2).mapPartitionsWithIndex(on_executor).collect()
finally:
    sc.stop()
for line in lines:
    print("executor " + line, flush=True)
"""


@dataclass
class Observer:
    """Polls, as admin, the namespace's ConfigMaps and pods and the bucket's objects while
    the operator runs (the ConfigMap and pods go with the driver at the end)."""

    admin: AdminHttp
    namespace: str
    s3: S3Server
    bucket: str
    configmaps: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    objects: dict[str, bytes] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Self:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _run(self) -> None:
        base = f"/api/v1/namespaces/{self.namespace}"
        while not self._stop.is_set():
            for item in self.admin.request("GET", f"{base}/configmaps")["items"]:
                self.configmaps[item["metadata"]["name"]] = item
            for item in self.admin.request("GET", f"{base}/pods")["items"]:
                self.pods[item["metadata"]["name"]] = item
            self.objects.update(self.s3.objects(self.bucket))
            self._stop.wait(0.5)


def driver_line(task_log_line: str) -> str:
    """A driver log line the operator copied into the task log, without the log's frame."""
    return task_log_line.split("[driver] ", 1)[1].rsplit(" [airflow.task", 1)[0].rstrip()


def write_app(src: Path, marker: str) -> dict[str, Path]:
    src.mkdir()
    (src / "helpers.py").write_text(f"def greet(name):\n    return 'uploaded-{marker} ' + name\n")
    (src / "words.txt").write_text("from-files\n")
    (src / "etl.py").write_text(PROGRAM)
    (src / "greeting.txt").write_text(f"unpacked-{marker}\n")
    with tarfile.open(src / "env.tar.gz", "w:gz") as archive:
        archive.add(src / "greeting.txt", arcname="greeting.txt")
    with zipfile.ZipFile(src / "sparkk8s-marker.jar", "w") as jar:
        jar.writestr("sparkk8s-marker.txt", marker)
    return {name: src / name for name in ("etl.py", "helpers.py", "words.txt")} | {
        "env.tar.gz": src / "env.tar.gz",
        "sparkk8s-marker.jar": src / "sparkk8s-marker.jar",
    }


def create_secret(admin: AdminHttp, namespace: str, data: dict[str, str]) -> None:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET}, "data": encoded}
    admin.request("POST", f"/api/v1/namespaces/{namespace}/secrets", json=body)


@pytest.fixture
def admin(runtime_plane: ControlPlane) -> AdminHttp:
    return AdminHttp.from_kubeconfig(runtime_plane.admin_kubeconfig)


def test_driver_and_executor_read_the_s3_uploads_with_credentials_from_a_secret(
    runtime_plane, runtime_namespace, admin, submitter, s3_server, monkeypatch, capfd, tmp_path
):  # type: ignore[no-untyped-def]
    namespace, s3 = runtime_namespace, s3_server
    bucket = s3.make_bucket("apps-" + secrets.token_hex(3))
    marker = secrets.token_hex(6)
    paths = write_app(tmp_path / "src", marker)
    create_secret(admin, namespace, {"access-key": s3.access_key, "secret-key": s3.secret_key})
    monkeypatch.setenv(
        "AIRFLOW_CONN_S3_UPLOADS",
        json.dumps(
            {
                "conn_type": "aws",
                "login": s3.access_key,
                "password": s3.secret_key,
                "extra": {"endpoint_url": s3.endpoint},
            }
        ),
    )
    upload_path = f"s3a://{bucket}/uploads"
    refs = {"AWS_ACCESS_KEY_ID": "access-key", "AWS_SECRET_ACCESS_KEY": "secret-key"}
    conf = {
        **BASE_CONF,
        "spark.executor.instances": "1",
        "spark.kubernetes.file.upload.path": upload_path,
        f"{S3A}endpoint": s3.endpoint,
        f"{S3A}endpoint.region": "us-east-1",  # else S3A signs for us-east-2 off AWS
        f"{S3A}path.style.access": "true",
        **{
            f"spark.kubernetes.{role}.secretKeyRef.{var}": f"{SECRET}:{key}"
            for role in ("driver", "executor")
            for var, key in refs.items()
        },
    }
    operator = SparkK8sSubmitOperator(
        task_id="s3a_etl",
        application=str(paths["etl.py"]),
        py_files=str(paths["helpers.py"]),
        files=str(paths["words.txt"]),
        archives=f"{paths['env.tar.gz']}#env",
        jars=str(paths["sparkk8s-marker.jar"]),
        application_args=[marker, f"{upload_path}/spark-upload-*/words.txt"],
        name="s3a-etl",
        conf=conf,
        namespace=namespace,
        kubernetes_conn_id=connection_for(monkeypatch, submitter),
        upload_conn_id="s3_uploads",
        deferrable=False,
        poll_interval=1.0,
        startup_timeout=300,
        on_finish_action="delete_pod",
        log_tail_lines=2000,
    )
    ti = FakeTaskInstance(task_id="s3a_etl")
    started = time.monotonic()
    with Observer(admin, namespace, s3, bucket) as seen:
        result = operator.execute({"ti": ti})
    REAL_SPARK_TIMINGS["s3a uploads: operator execute (submit to driver deleted)"] = (
        time.monotonic() - started
    )
    log = "".join(capfd.readouterr())  # the task log (Airflow's structlog writes to stderr)
    assert result["state"] == "succeeded", log[-4000:]

    # What was uploaded, byte for byte, and gone with the driver.
    uploaded = {key.rsplit("/", 1)[1]: data for key, data in seen.objects.items()}
    assert uploaded == {name: path.read_bytes() for name, path in paths.items()}
    assert all(key.startswith("uploads/spark-upload-") for key in seen.objects)
    assert s3.objects(bucket) == {}

    # The driver ran the uploaded program with the uploaded module and jar.
    driver = [driver_line(line) for line in log.splitlines() if "[driver] " in line]
    assert f"driver: uploaded-{marker} {marker}" in driver, log[-4000:]
    assert "driver jar resource: True" in driver
    assert any("sparkk8s-marker.jar" in line for line in driver if line.startswith("driver jars"))

    # Each partition ran on an executor pod of this application, with the module, the
    # --files text, the archive, and the bytes its own S3A client read from the bucket.
    executors = {
        name
        for name, pod in seen.pods.items()
        if pod["metadata"]["labels"].get("spark-role") == "executor"
    }
    partitions = [line for line in driver if line.startswith("executor partition ")]
    # textFile's two-split minimum over 11 bytes makes three splits (goal size 5).
    assert len(partitions) >= 2, driver[-60:]
    read_from_s3: list[str] = []
    for index, line in enumerate(sorted(partitions)):
        head, _, rest = line.partition(": ")
        assert head == f"executor partition {index}"
        body, _, host = rest.rpartition(" on ")
        assert host in executors, (host, executors)
        greeting, _, s3a = body.partition(" s3a=")
        assert greeting == f"uploaded-{marker} from-files archive=unpacked-{marker}"
        read_from_s3 += [word for word in s3a.strip("[]").split(",") if word]
    assert read_from_s3 == ["from-files"]

    # The credentials: references in the pods, values nowhere.
    (driver_pod,) = (
        p for p in seen.pods.values() if p["metadata"]["labels"]["spark-role"] == "driver"
    )
    for pod in [driver_pod, *(seen.pods[name] for name in executors)]:
        env = {item["name"]: item for item in pod["spec"]["containers"][0]["env"]}
        for var, key in refs.items():
            assert env[var] == {
                "name": var,
                "valueFrom": {"secretKeyRef": {"name": SECRET, "key": key}},
            }
    # The driver's ConfigMap is the one its pod mounts (the executors' has its own).
    (conf_map_name,) = (
        v["configMap"]["name"] for v in driver_pod["spec"]["volumes"] if "configMap" in v
    )
    conf_map = seen.configmaps[conf_map_name]
    properties = load_java_properties(conf_map["data"]["spark.properties"])
    assert properties["spark.submit.pyFiles"].startswith(f"{upload_path}/spark-upload-")
    assert f"{S3A}secret.key" not in properties and f"{S3A}access.key" not in properties
    stored = json.dumps([seen.configmaps, seen.pods])
    for value in (s3.secret_key, s3.access_key):
        assert value not in stored
        assert value not in log
        assert value not in json.dumps([result, ti.xcom], default=str)
