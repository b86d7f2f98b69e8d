"""Real Spark reads what the operator uploaded to GCS: the operator (worker-side wait, no
upload connection: the `spark.hadoop.fs.gs.*` keys alone, as spark-submit reads them) puts
the main `.py`, `--py-files`, `--files`, `--archives` and `--jars` into a fake-gcs-server
bucket under `spark.kubernetes.file.upload.path=gs://...`; pyspark 4.3.0's driver, in a pod
of the real node, downloads them through the image's GCS connector (testenv/gcs_connector.py)
with the same keys: the emulator's root URL over plain HTTP, no credentials, and on its
Hadoop 3.5 the connector named in place of the file system core-default.xml names. Its
executor imports the module, reads the `--files` text and the unpacked archive it fetched
from the driver, and reads the uploaded text itself straight from the bucket. Each
partition's line names the executor pod it ran on, and the uploads go with the driver.
The steps are the S3 test's (tests/runtime/object_store_app.py).

The worker and the pods reach the emulator at different addresses here (its loopback port;
the node IP's port forwarded to it, `RealNode.expose_host_port`), so the root URL is a
`${env.NAME}` reference, which each side expands from its own environment: our upload from
the worker's, Hadoop in the driver and the executor from the pod's."""

from __future__ import annotations

import secrets

import pytest

from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from testenv import gcs_connector
from testenv.admin_client import AdminHttp
from testenv.gcsserver import GcsServer
from testenv.hadoop_aws import hadoop_version
from testenv.real_spark import BASE_CONF, SMALL_PODS
from testenv.runtime_image import SPARK_VERSION, distribution_jars, pyspark_venv
from tests.runtime.object_store_app import check_the_run, operator_app, run_the_operator, write_app
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]
ROOT_URL_VAR = "SPARKK8S_TEST_GCS_ROOT_URL"


def test_driver_and_executor_read_the_gcs_uploads(
    real_node,
    real_plane,
    real_namespace,
    real_submitter,
    gcs_server: GcsServer,
    monkeypatch,
    capfd,
    tmp_path,
):  # type: ignore[no-untyped-def]
    namespace, gcs = real_namespace, gcs_server
    admin = AdminHttp.from_kubeconfig(real_plane.admin_kubeconfig)
    bucket = gcs.make_bucket("apps-" + secrets.token_hex(3))
    marker = secrets.token_hex(6)
    paths = write_app(tmp_path / "src", marker)
    upload_path = f"gs://{bucket}/uploads"
    # The image's Hadoop, read from its jars as the image builder reads it.
    hadoop = hadoop_version(distribution_jars(pyspark_venv(SPARK_VERSION)))
    assert hadoop is not None
    gs_conf = gcs_connector.hadoop_conf(hadoop, f"${{env.{ROOT_URL_VAR}}}")
    monkeypatch.setenv(ROOT_URL_VAR, gcs.endpoint)
    in_pods = f"http://{real_node.expose_host_port(gcs.port)}"
    conf = {
        **BASE_CONF,
        **SMALL_PODS,
        "spark.executor.instances": "1",
        "spark.kubernetes.file.upload.path": upload_path,
        f"spark.kubernetes.driverEnv.{ROOT_URL_VAR}": in_pods,
        f"spark.executorEnv.{ROOT_URL_VAR}": in_pods,
        **gs_conf,
    }
    _, _, log, seen = run_the_operator(
        "gcs",
        operator_app(paths, marker, upload_path),
        lambda: gcs.objects(bucket),
        admin,
        capfd,
        conf=conf,
        namespace=namespace,
        kubernetes_conn_id=connection_for(monkeypatch, real_submitter),
    )

    check_the_run(log, seen, paths, marker, gcs.objects(bucket))

    # The driver's connector was handed the keys our upload read, and the uploaded paths.
    (conf_map_name,) = (
        v["configMap"]["name"] for v in seen.driver_pod()["spec"]["volumes"] if "configMap" in v
    )
    properties = load_java_properties(seen.configmaps[conf_map_name]["data"]["spark.properties"])
    assert {key: properties[key] for key in gs_conf} == gs_conf
    assert properties["spark.submit.pyFiles"].startswith(f"{upload_path}/spark-upload-")
