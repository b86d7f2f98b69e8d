"""What the real-Spark object-store tests share (S3: test_s3a_uploads_real_spark.py, GCS:
test_gcs_uploads_real_spark.py): the user's program and its files, an observer of the
namespace and the bucket while the operator runs, and the checks that the driver and its
executor ran what was uploaded, where it was uploaded, and that the uploads went with the
driver.

The driver greets with the uploaded module and checks the uploaded jar is on its class path;
each partition, on the executor, greets with the module, the --files text and the unpacked
archive it fetched from the driver, and shows what it read from the bucket itself (the
uploaded text, through the image's connector for that store)."""

from __future__ import annotations

import tarfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from testenv.admin_client import AdminHttp
from testenv.fakes import FakeTaskInstance
from testenv.real_spark import REAL_SPARK_TIMINGS

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
    yield f"partition {index}: {greet(word)} archive={archived} read=[{read}] on {host}"


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
    """Polls, as admin, the namespace's ConfigMaps and pods and the bucket's objects
    (`bucket_objects()`: name -> bytes) while the operator runs (the ConfigMap and pods go with the
    driver at the end)."""

    admin: AdminHttp
    namespace: str
    bucket_objects: Callable[[], dict[str, bytes]]
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
            self.objects.update(self.bucket_objects())
            self._stop.wait(0.5)

    def executor_pods(self) -> set[str]:
        return {
            name
            for name, pod in self.pods.items()
            if pod["metadata"]["labels"].get("spark-role") == "executor"
        }

    def driver_pod(self) -> dict[str, Any]:
        (pod,) = (
            p for p in self.pods.values() if p["metadata"]["labels"]["spark-role"] == "driver"
        )
        return pod


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


def operator_app(paths: dict[str, Path], marker: str, upload_path: str) -> dict[str, Any]:
    """The operator's arguments for the program: every kind of file spark-submit uploads,
    and the glob of the uploaded --files text for the executor to read from the bucket."""
    return {
        "application": str(paths["etl.py"]),
        "py_files": str(paths["helpers.py"]),
        "files": str(paths["words.txt"]),
        "archives": f"{paths['env.tar.gz']}#env",
        "jars": str(paths["sparkk8s-marker.jar"]),
        "application_args": [marker, f"{upload_path}/spark-upload-*/words.txt"],
    }


def driver_line(task_log_line: str) -> str:
    """A driver log line the operator copied into the task log, without the log's frame."""
    return task_log_line.split("[driver] ", 1)[1].rsplit(" [airflow.task", 1)[0].rstrip()


def check_the_run(
    log: str,
    seen: Observer,
    paths: dict[str, Path],
    marker: str,
    objects_now: dict[str, bytes],
) -> None:
    """The uploads byte for byte under `uploads/` and gone with the driver; the driver ran
    the uploaded program with the uploaded module and jar; each partition ran on an executor
    pod of this application with the module, the --files text and the archive, and read the
    uploaded text from the bucket itself."""
    uploaded = {key.rsplit("/", 1)[1]: data for key, data in seen.objects.items()}
    assert uploaded == {name: path.read_bytes() for name, path in paths.items()}
    assert all(key.startswith("uploads/spark-upload-") for key in seen.objects)
    assert objects_now == {}

    driver = [driver_line(line) for line in log.splitlines() if "[driver] " in line]
    assert f"driver: uploaded-{marker} {marker}" in driver, log[-4000:]
    assert "driver jar resource: True" in driver
    assert any("sparkk8s-marker.jar" in line for line in driver if line.startswith("driver jars"))

    executors = seen.executor_pods()
    partitions = [line for line in driver if line.startswith("executor partition ")]
    # textFile's two-split minimum over 11 bytes makes three splits (goal size 5).
    assert len(partitions) >= 2, driver[-60:]
    read_from_bucket: list[str] = []
    for index, line in enumerate(sorted(partitions)):
        head, _, rest = line.partition(": ")
        assert head == f"executor partition {index}"
        body, _, host = rest.rpartition(" on ")
        assert host in executors, (host, executors)
        greeting, _, read = body.partition(" read=")
        assert greeting == f"uploaded-{marker} from-files archive=unpacked-{marker}"
        read_from_bucket += [word for word in read.strip("[]").split(",") if word]
    assert read_from_bucket == ["from-files"]


def run_the_operator(
    store: str,
    app: dict[str, Any],
    objects: Callable[[], dict[str, bytes]],
    admin: AdminHttp,
    capfd: Any,
    **arguments: Any,
) -> tuple[dict[str, Any], dict[str, Any], str, Observer]:
    """The operator waiting in the worker for the program `app` (operator_app), watched by an
    Observer of the namespace and the bucket: its result, its XComs, the task log, and what
    was seen."""
    task_id = f"{store}_etl"
    operator = SparkK8sSubmitOperator(
        task_id=task_id,
        **app,
        name=f"{store}-etl",
        deferrable=False,
        poll_interval=1.0,
        startup_timeout=300,
        on_finish_action="delete_pod",
        log_tail_lines=2000,
        **arguments,
    )
    ti = FakeTaskInstance(task_id=task_id)
    started = time.monotonic()
    with Observer(admin, arguments["namespace"], objects) as seen:
        result = operator.execute({"ti": ti})
    REAL_SPARK_TIMINGS[f"{store} uploads: operator execute (submit to driver deleted)"] = (
        time.monotonic() - started
    )
    log = "".join(capfd.readouterr())  # the task log (Airflow's structlog writes to stderr)
    assert result["state"] == "succeeded", log[-4000:]
    return result, ti.xcom, log, seen
