"""Real Spark runs an uploaded PySpark file: sparkk8s-submit uploads the main `.py`, its
`--py-files` and a `--files` data file to a `file://` host folder that the driver pod mounts
at the same path (a hostPath volume); the driver (pyspark 4.3.0's spark-submit in client
mode, in a pod of the real node) reads them from there, and its executor fetches the module and the data file from the driver and uses them. A `file://` path because pyspark ships no hadoop-aws: the driver cannot read `s3a://`
out of the box (the S3 upload itself is tested against a real S3 server in tests/storage)."""

from __future__ import annotations

import io
import secrets

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from tests.support.real_spark import BASE_CONF, SMALL_PODS, host_folder_conf

pytestmark = pytest.mark.controlplane


# The driver greets with the uploaded module; each partition, on the executor, greets again
# with the module and the --files text the executor fetched from the driver.
EXECUTOR_PROGRAM = """\
import socket
import sys

from pyspark import SparkContext, SparkFiles

from helpers import greet


def on_executor(_):
    from helpers import greet

    with open(SparkFiles.get("words.txt")) as handle:
        word = handle.read().strip()
    return greet(word) + " on " + socket.gethostname()


print("driver: " + greet(sys.argv[1]), flush=True)
sc = SparkContext.getOrCreate()
try:
    lines = sc.parallelize(range(2), 2).map(on_executor).collect()
finally:
    sc.stop()
for line in sorted(set(lines)):
    print("executor: " + line, flush=True)
"""


def driver_log(api, namespace: str, name: str) -> str:  # type: ignore[no-untyped-def]
    with kube.session(api) as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log")
    return response.text if response.status_code == 200 else ""


def test_driver_and_executor_run_the_uploaded_files(
    real_plane, real_namespace, real_admin, real_submitter, real_shared_dir, tmp_path
):  # type: ignore[no-untyped-def]
    api, namespace, shared_dir = real_admin, real_namespace, real_shared_dir
    marker = secrets.token_hex(6)
    src = tmp_path / "src"
    src.mkdir()
    (src / "helpers.py").write_text(f"def greet(name):\n    return 'uploaded-{marker} ' + name\n")
    (src / "words.txt").write_text("from-files\n")
    (src / "etl.py").write_text(EXECUTOR_PROGRAM)
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        **host_folder_conf(shared_dir, ("driver",)),  # the executor fetches from the driver
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.submission.waitAppCompletion": "false",
        "spark.kubernetes.file.upload.path": f"file://{shared_dir}",
        "spark.executor.instances": "1",
    }
    argv = ["--master", f"k8s://{real_plane.server}", "--deploy-mode", "cluster",
            "--name", "uploaded-etl"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += ["--py-files", str(src / "helpers.py"), "--files", str(src / "words.txt"),
             str(src / "etl.py"), "world"]  # fmt: skip
    environ = {"KUBECONFIG": str(real_submitter), "HOME": str(tmp_path)}
    assert run(argv, environ=environ, out=io.StringIO(), err=io.StringIO()).exit_code == 0
    uploaded = sorted(p.name for p in shared_dir.rglob("*.py"))
    assert uploaded == ["etl.py", "helpers.py"]
    assert [p.name for p in shared_dir.rglob("words.txt")] == ["words.txt"]

    def finished() -> dict | None:  # type: ignore[type-arg]
        pods = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
        drivers = [p for p in pods if p["metadata"]["labels"].get("spark-role") == "driver"]
        done = [p for p in drivers if p["status"].get("phase") in ("Succeeded", "Failed")]
        return done[0] if done else None

    pod = wait_for(finished, 300, "the driver to finish")
    log = driver_log(api, namespace, pod["metadata"]["name"])
    assert pod["status"]["phase"] == "Succeeded", log[-3000:]
    assert f"driver: uploaded-{marker} world" in log
    executor_lines = [line for line in log.splitlines() if line.startswith("executor: ")]
    # Both partitions ran on the executor pod (its host name is the pod's name), with the
    # module from --py-files and the text from --files that it fetched from the driver.
    assert executor_lines, log[-3000:]
    for line in executor_lines:
        greeting, _, host = line.removeprefix("executor: ").partition(" on ")
        assert greeting == f"uploaded-{marker} from-files"
        assert "-exec-" in host
