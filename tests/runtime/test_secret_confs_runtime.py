"""Real Spark reads secret confs back from the driver's Secret
(spark.kubernetes.sparkk8s.secretConfs.enabled): pyspark 4.3.0's driver, in a pod of the
real node, gets `spark.hadoop.fs.s3a.secret.key` through Hadoop's `${env.VAR}`
expansion, `spark.kubernetes.driverEnv.DB_PASSWORD` as its env var, and its executor gets
`spark.executorEnv.API_TOKEN` and the S3 key's env var, all from the Secret, while the
ConfigMap and the pods hold none of the values. The program prints digests, not values."""

from __future__ import annotations

import hashlib
import io
import json
import secrets

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.submission.secret_confs import ENABLED_KEY
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from tests.support.real_spark import BASE_CONF, SMALL_PODS, host_folder_conf

pytestmark = pytest.mark.controlplane

S3_VAR = "SPARKK8S_CONF_SPARK_HADOOP_FS_S3A_SECRET_KEY"
PROGRAM = f"""\
import hashlib
import os

from pyspark import SparkContext


def digest(value):
    return hashlib.sha256((value or "<none>").encode()).hexdigest()[:16]


def on_executor(_):
    return "executor: " + digest(os.environ.get("API_TOKEN")) + " " + digest(
        os.environ.get("{S3_VAR}")
    )


sc = SparkContext.getOrCreate()
try:
    hadoop = sc._jsc.hadoopConfiguration()
    print("driver hadoop: " + digest(hadoop.get("fs.s3a.secret.key")), flush=True)
    print("driver env: " + digest(os.environ.get("DB_PASSWORD")), flush=True)
    print("driver conf: " + sc.getConf().get("spark.hadoop.fs.s3a.secret.key"), flush=True)
    lines = sc.parallelize(range(1), 1).map(on_executor).collect()
finally:
    sc.stop()
for line in lines:
    print(line, flush=True)
"""


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def test_driver_and_executor_read_secret_confs_from_the_secret(
    real_plane, real_namespace, real_admin, real_submitter, real_shared_dir, tmp_path
):  # type: ignore[no-untyped-def]
    api, namespace, shared_dir = real_admin, real_namespace, real_shared_dir
    planted = {
        "spark.hadoop.fs.s3a.secret.key": f"planted-s3-{secrets.token_hex(6)}",
        "spark.kubernetes.driverEnv.DB_PASSWORD": f"planted-db-{secrets.token_hex(6)}",
        "spark.executorEnv.API_TOKEN": f"planted-api-{secrets.token_hex(6)}",
    }
    (tmp_path / "read_secrets.py").write_text(PROGRAM)
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        **host_folder_conf(shared_dir, ("driver",)),  # the driver reads the upload there
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.submission.waitAppCompletion": "false",
        "spark.kubernetes.file.upload.path": f"file://{shared_dir}",
        "spark.executor.instances": "1",
        ENABLED_KEY: "true",
        **planted,
    }
    argv = ["--master", f"k8s://{real_plane.server}", "--deploy-mode", "cluster",
            "--name", "secret-confs"]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv.append(str(tmp_path / "read_secrets.py"))
    environ = {"KUBECONFIG": str(real_submitter), "HOME": str(tmp_path)}
    out, err = io.StringIO(), io.StringIO()
    assert run(argv, environ=environ, out=out, err=err).exit_code == 0, err.getvalue()
    for value in planted.values():
        assert value not in out.getvalue() + err.getvalue()

    def finished() -> dict | None:  # type: ignore[type-arg]
        pods = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
        drivers = [p for p in pods if p["metadata"]["labels"].get("spark-role") == "driver"]
        done = [p for p in drivers if p["status"].get("phase") in ("Succeeded", "Failed")]
        return done[0] if done else None

    pod = wait_for(finished, 300, "the driver to finish")
    name = pod["metadata"]["name"]
    with kube.session(api) as client:
        log = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log").text
    assert pod["status"]["phase"] == "Succeeded", log[-3000:]
    s3, db, token = planted.values()
    assert f"driver hadoop: {digest(s3)}" in log, log[-3000:]
    assert f"driver env: {digest(db)}" in log
    # The conf itself holds the reference; Hadoop expanded it.
    assert f"driver conf: ${{env.{S3_VAR}}}" in log
    assert f"executor: {digest(token)} {digest(s3)}" in log, log[-3000:]
    stored = json.dumps(kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/configmaps"))
    stored += json.dumps(kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods"))
    for value in planted.values():
        assert value not in stored
        assert value not in log
