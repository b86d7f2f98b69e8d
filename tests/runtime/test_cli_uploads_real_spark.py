"""One real application submitted by sparkk8s-submit, read by two tests (issue 42: tests
that check different aspects of one application read one run of it). pyspark 4.3.0's driver
runs in a pod of the real node, as the documented submitter:

- uploads: the CLI uploads the main `.py`, its `--py-files` and a `--files` data file to a
  `file://` host folder that the driver pod mounts at the same path (a hostPath volume); the
  driver reads them from there, and its executor fetches the module and the data file from
  the driver and uses them. A `file://` path because the uploads to S3, GCS and Azure are
  tests/runtime's object-store tests, each with its store's connector;
- secret confs (spark.kubernetes.sparkk8s.secretConfs.enabled): the driver gets
  `spark.hadoop.fs.s3a.secret.key` through Hadoop's `${env.VAR}` expansion and
  `spark.kubernetes.driverEnv.DB_PASSWORD` as its env var, its executor gets
  `spark.executorEnv.API_TOKEN` and the S3 key's env var, all from the driver's Secret, while
  the ConfigMap, the pods and the CLI's output hold none of the values. The program prints
  digests, not values."""

from __future__ import annotations

import hashlib
import io
import json
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.submission.secret_confs import ENABLED_KEY
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import BASE_CONF, SMALL_PODS, host_folder_conf, submitter_kubeconfig
from tests.conftest import _admin_session, _fresh_namespace

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

S3_VAR = "SPARKK8S_CONF_SPARK_HADOOP_FS_S3A_SECRET_KEY"
# The driver greets with the uploaded module and prints the digests of what it read; each
# partition, on the executor, greets again with the module and the --files text the executor
# fetched from the driver, and digests what it read.
PROGRAM = f"""\
import hashlib
import os
import socket
import sys

from pyspark import SparkContext, SparkFiles

from helpers import greet


def digest(value):
    return hashlib.sha256((value or "<none>").encode()).hexdigest()[:16]


def on_executor(_):
    from helpers import greet

    with open(SparkFiles.get("words.txt")) as handle:
        word = handle.read().strip()
    secrets = digest(os.environ.get("API_TOKEN")) + " " + digest(os.environ.get("{S3_VAR}"))
    return greet(word) + " on " + socket.gethostname() + " secrets " + secrets


print("driver: " + greet(sys.argv[1]), flush=True)
sc = SparkContext.getOrCreate()
try:
    hadoop = sc._jsc.hadoopConfiguration()
    print("driver hadoop: " + digest(hadoop.get("fs.s3a.secret.key")), flush=True)
    print("driver env: " + digest(os.environ.get("DB_PASSWORD")), flush=True)
    print("driver conf: " + sc.getConf().get("spark.hadoop.fs.s3a.secret.key"), flush=True)
    lines = sc.parallelize(range(2), 2).map(on_executor).collect()
finally:
    sc.stop()
for line in sorted(set(lines)):
    print("executor: " + line, flush=True)
"""


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CliRun:
    marker: str  # in the uploaded module's greeting
    planted: dict[str, str]  # the secret confs, key -> value
    output: str  # the CLI's stdout and stderr
    shared_dir: Path  # where the CLI uploaded
    uploaded: list[str]  # the file names found there once the driver ended
    phase: str  # the driver pod's last phase
    log: str  # the driver's log
    stored: str  # every ConfigMap and pod of the namespace, as JSON


@pytest.fixture(scope="module")
def cli_run(
    real_plane: ControlPlane,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CliRun]:
    tmp = tmp_path_factory.mktemp("cli-run")
    shared_dir = Path.home() / ".cache" / "sparkk8s-test-uploads" / secrets.token_hex(4)
    shared_dir.mkdir(parents=True)
    shared_dir.chmod(0o777)  # the tests write it as root, the pods as the image's user 185
    try:
        with (
            contextmanager(_fresh_namespace)(real_plane, request) as namespace,
            contextmanager(_admin_session)(real_plane) as api,
        ):
            yield submit_and_read(real_plane, api, namespace, shared_dir, tmp)
    finally:
        shutil.rmtree(shared_dir, ignore_errors=True)


def submit_and_read(plane, api, namespace: str, shared_dir: Path, tmp: Path) -> CliRun:  # type: ignore[no-untyped-def]
    marker = secrets.token_hex(6)
    planted = {
        "spark.hadoop.fs.s3a.secret.key": f"planted-s3-{secrets.token_hex(6)}",
        "spark.kubernetes.driverEnv.DB_PASSWORD": f"planted-db-{secrets.token_hex(6)}",
        "spark.executorEnv.API_TOKEN": f"planted-api-{secrets.token_hex(6)}",
    }
    src = tmp / "src"
    src.mkdir()
    (src / "helpers.py").write_text(f"def greet(name):\n    return 'uploaded-{marker} ' + name\n")
    (src / "words.txt").write_text("from-files\n")
    (src / "etl.py").write_text(PROGRAM)
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        **host_folder_conf(shared_dir, ("driver",)),  # the executor fetches from the driver
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.submission.waitAppCompletion": "false",
        "spark.kubernetes.file.upload.path": f"file://{shared_dir}",
        "spark.executor.instances": "1",
        ENABLED_KEY: "true",
        **planted,
    }
    argv = ["--master", f"k8s://{plane.server}", "--deploy-mode", "cluster",
            "--name", "uploaded-etl"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += ["--py-files", str(src / "helpers.py"), "--files", str(src / "words.txt"),
             str(src / "etl.py"), "world"]  # fmt: skip
    submitter = submitter_kubeconfig(plane, namespace, tmp / "submitter.kubeconfig")
    environ = {"KUBECONFIG": str(submitter), "HOME": str(tmp)}
    out, err = io.StringIO(), io.StringIO()
    assert run(argv, environ=environ, out=out, err=err).exit_code == 0, err.getvalue()

    def finished() -> dict | None:  # type: ignore[type-arg]
        pods = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
        drivers = [p for p in pods if p["metadata"]["labels"].get("spark-role") == "driver"]
        done = [p for p in drivers if p["status"].get("phase") in ("Succeeded", "Failed")]
        return done[0] if done else None

    pod = wait_for(finished, 300, "the driver to finish")
    with kube.session(api) as client:
        log = client.get(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/log")
    stored = json.dumps(kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps"))
    stored += json.dumps(kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods"))
    return CliRun(
        marker=marker,
        planted=planted,
        output=out.getvalue() + err.getvalue(),
        shared_dir=shared_dir,
        uploaded=sorted(p.name for p in shared_dir.rglob("*") if p.is_file()),
        phase=pod["status"]["phase"],
        log=log.text if log.status_code == 200 else "",
        stored=stored,
    )


def test_driver_and_executor_run_the_uploaded_files(cli_run: CliRun) -> None:
    log = cli_run.log
    assert cli_run.phase == "Succeeded", log[-3000:]
    assert cli_run.uploaded == ["etl.py", "helpers.py", "words.txt"], cli_run.uploaded
    assert f"driver: uploaded-{cli_run.marker} world" in log
    executor_lines = [line for line in log.splitlines() if line.startswith("executor: ")]
    # Both partitions ran on the executor pod (its host name is the pod's name), with the
    # module from --py-files and the text from --files that it fetched from the driver.
    assert executor_lines, log[-3000:]
    for line in executor_lines:
        greeting, _, rest = line.removeprefix("executor: ").partition(" on ")
        assert greeting == f"uploaded-{cli_run.marker} from-files"
        host = rest.partition(" secrets ")[0]
        assert "-exec-" in host


def test_driver_and_executor_read_secret_confs_from_the_secret(cli_run: CliRun) -> None:
    log = cli_run.log
    assert cli_run.phase == "Succeeded", log[-3000:]
    s3, db, token = cli_run.planted.values()
    assert f"driver hadoop: {digest(s3)}" in log, log[-3000:]
    assert f"driver env: {digest(db)}" in log
    # The conf itself holds the reference; Hadoop expanded it.
    assert f"driver conf: ${{env.{S3_VAR}}}" in log
    executor_lines = [line for line in log.splitlines() if line.startswith("executor: ")]
    assert executor_lines, log[-3000:]
    for line in executor_lines:
        assert line.endswith(f" secrets {digest(token)} {digest(s3)}"), line
    for value in cli_run.planted.values():
        assert value not in cli_run.output
        assert value not in cli_run.stored
        assert value not in log
