"""What spark-submit itself does with an `abfs://` upload path, on the real node: pyspark
4.3.0's own `spark-submit` (cluster mode, waiting, as SparkSubmitOperator runs it), with
hadoop-azure on its class path as a user's machine would have it, uploads the program and
its `--py-files` and `--files` to Azurite through ABFS in its JVM, and the driver reads
them, as with our operator (test_azure_uploads_real_spark.py).

Two differences the operator's test cannot show:
- Hadoop 3.5.0's ABFS metrics threads (non-daemon, stopped only at JVM shutdown) keep
  spark-submit's own JVM alive once the application has ended, as they keep the driver's:
  without `fs.azure.metrics.collection.enabled=false` it is still running after the driver
  pod Succeeded. Our upload runs in Python and has no such threads. (The key is
  `${env.ABFS_METRICS}`: false in the pods, so the driver ends either way, and true or false
  on the submitting machine.)
- spark-submit leaves its `spark-upload-*` folder in the container; ours go with the driver.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from testenv import hadoop_aws, hadoop_azure
from testenv.admin_client import AdminHttp
from testenv.azurite import Azurite
from testenv.controlplane import ControlPlane
from testenv.harness.oracle import oracle_environment, spark_submit_path
from testenv.real_spark import BASE_CONF, SMALL_PODS, submitter_kubeconfig
from testenv.realnode.node import RealNode
from testenv.runtime_image import distribution_jars, image_name, pyspark_venv
from tests.conftest import _fresh_namespace
from tests.runtime.object_store_app import write_app

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

VERSION = "4.3.0"
# After the driver Succeeded, for spark-submit to exit: with metrics off it exited 0.0 s after
# the test saw the driver end (2026-12-07); with them on, its non-daemon threads are listed.
EXIT_GRACE_SECONDS = 15.0


def connector_classpath() -> str:
    """hadoop-azure's jars that the distribution lacks, for spark-submit's own JVM."""
    jars = distribution_jars(pyspark_venv(VERSION))
    hadoop = hadoop_aws.hadoop_version(jars)
    assert hadoop is not None
    connector = hadoop_azure.fetch(hadoop)
    names = hadoop_aws.jars_to_add(
        (p.name for p in connector.glob("*.jar")), (p.name for p in jars.glob("*.jar"))
    )
    return ":".join(str(connector / name) for name in names)


def driver_phase(admin: AdminHttp, namespace: str) -> str | None:
    items = admin.json(
        "GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector=spark-role%3Ddriver"
    )["items"]
    return items[0]["status"].get("phase") if items else None


def non_daemon_threads(pid: int) -> list[str]:
    jstack = (
        Path(os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")) / "bin" / "jstack"
    )
    dump = subprocess.run(
        [str(jstack), str(pid)], capture_output=True, text=True, check=False
    ).stdout
    return [
        line.split('"')[1]
        for line in dump.splitlines()
        if line.startswith('"') and " daemon " not in line and "#" in line
    ]


@dataclass
class SubmitRun:
    """One spark-submit, as the test saw it: the driver's end, then spark-submit's."""

    phase: str | None  # the driver pod's last phase
    code: int | None  # spark-submit's exit code, None if it still ran after the grace
    threads: list[str]  # its JVM's non-daemon threads, if it still ran
    log: str  # what it printed
    left: list[str]  # the blobs of its upload container, afterwards


def submit_and_watch(
    metrics_off: bool,
    plane: ControlPlane,
    namespace: str,
    submitter: Path,
    azurite: Azurite,
    in_pods: str,
    tmp_path: Path,
) -> SubmitRun:
    """spark-submit, cluster mode, waiting; once the driver ended, EXIT_GRACE_SECONDS for
    spark-submit to exit, and its JVM's threads if it did not."""
    admin = AdminHttp.from_kubeconfig(plane.admin_kubeconfig)
    container = azurite.make_container("jvm-" + secrets.token_hex(3))
    host = f"{azurite.account}.dfs.core.windows.net"
    upload_path = f"abfs://{container}@{host}/uploads"
    marker = secrets.token_hex(6)
    paths = write_app(tmp_path / "src", marker)
    admin.request("POST", f"/api/v1/namespaces/{namespace}/secrets", json={
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "azure"},
        "stringData": {"account-key": azurite.account_key},
    })  # fmt: skip
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": image_name(VERSION),
        "spark.executor.instances": "1",
        "spark.kubernetes.file.upload.path": upload_path,
        f"spark.hadoop.fs.azure.account.key.{host}": "${env.AZURE_ACCOUNT_KEY}",
        **hadoop_azure.abfs_emulator_conf("${env.AZURE_BLOB_ENDPOINT}"),
        # The driver's ABFS metrics are off in both cases (else the driver pod never ends);
        # spark-submit's own JVM reads the machine's variable: on unless `metrics_off`.
        "spark.hadoop.fs.azure.metrics.collection.enabled": "${env.ABFS_METRICS}",
        "spark.kubernetes.driverEnv.ABFS_METRICS": "false",
        "spark.executorEnv.ABFS_METRICS": "false",
        **{
            f"spark.kubernetes.{role}.secretKeyRef.AZURE_ACCOUNT_KEY": "azure:account-key"
            for role in ("driver", "executor")
        },
        "spark.kubernetes.driverEnv.AZURE_BLOB_ENDPOINT": in_pods,
        "spark.executorEnv.AZURE_BLOB_ENDPOINT": in_pods,
    }
    argv = [str(spark_submit_path(VERSION)), "--master", f"k8s://{plane.server}",
            "--deploy-mode", "cluster", "--name", "az-jvm",
            "--py-files", str(paths["helpers.py"]), "--files", str(paths["words.txt"]),
            "--archives", f"{paths['env.tar.gz']}#env", "--jars", str(paths["sparkk8s-marker.jar"])]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(paths["etl.py"]), marker, f"{upload_path}/spark-upload-*/words.txt"]
    env = oracle_environment(VERSION, {
        "KUBECONFIG": str(submitter),
        "SPARK_DIST_CLASSPATH": connector_classpath(),
        "AZURE_ACCOUNT_KEY": azurite.account_key,  # the submitting machine's, as for ours
        "AZURE_BLOB_ENDPOINT": f"127.0.0.1:{azurite.port}",
        "ABFS_METRICS": "false" if metrics_off else "true",
    }, tmp_path)  # fmt: skip
    env.pop("SPARK_SUBMIT_OPTS", None)
    log = tmp_path / "spark-submit.log"
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while driver_phase(admin, namespace) not in ("Succeeded", "Failed"):
            assert process.poll() is None or driver_phase(admin, namespace), log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(1)
        ended = time.monotonic()
        phase = driver_phase(admin, namespace)
        try:
            code: int | None = process.wait(EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        print(f"spark-submit: driver ended at {ended - started:.1f} s; exit {code} "
              f"{time.monotonic() - ended:.1f} s later")  # fmt: skip
        threads = non_daemon_threads(process.pid) if code is None else []
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)
    return SubmitRun(phase, code, threads, log.read_text(), sorted(azurite.objects(container)))


@pytest.fixture(scope="module")
def submit_runs(
    real_node: RealNode,
    real_plane: ControlPlane,
    azurite: Azurite,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[bool, Future[SubmitRun]]]:
    """Both spark-submits at once, each in a namespace of its own: they share only Azurite
    (a container each), and each mostly waits on its driver."""
    real_node.ensure_spark_image(VERSION)
    in_pods = real_node.expose_host_port(azurite.port)
    with ExitStack() as namespaces:
        given = {}
        for metrics_off in (False, True):
            ns = namespaces.enter_context(contextmanager(_fresh_namespace)(real_plane, request))
            tmp = tmp_path_factory.mktemp(f"abfs-metrics-{'off' if metrics_off else 'on'}")
            given[metrics_off] = (ns, submitter_kubeconfig(real_plane, ns, tmp / "kc"), tmp)
        with ThreadPoolExecutor(len(given)) as pool:
            yield {
                off: pool.submit(submit_and_watch, off, real_plane, ns, kc, azurite, in_pods, tmp)
                for off, (ns, kc, tmp) in given.items()
            }


@pytest.mark.parametrize("metrics_off", [False, True], ids=["abfs-metrics-on", "abfs-metrics-off"])
def test_spark_submit_uploads_to_abfs_and_its_jvm_outlives_the_application_unless_metrics_are_off(
    metrics_off: bool, submit_runs: dict[bool, Future[SubmitRun]], azurite: Azurite
):
    run = submit_runs[metrics_off].result()
    assert run.phase == "Succeeded", run.log[-3000:]
    if metrics_off:
        assert run.code == 0, run.log[-3000:]
    else:
        assert run.code is None, "spark-submit exited: Hadoop's ABFS no longer holds its JVM"
        print("spark-submit's non-daemon threads:", run.threads)
        assert any(name.startswith("pool-") for name in run.threads), run.threads
    # spark-submit leaves its uploads behind (with the folder marker blobs ABFS writes).
    assert any(name.endswith("/helpers.py") for name in run.left), run.left
    assert all(name.startswith("uploads") for name in run.left), run.left
    assert azurite.account_key not in run.log
