"""Real Spark reads what the operator uploaded to Azure Blob storage: the operator (worker-side
wait, no upload connection: hadoop-azure's own keys, as spark-submit reads them) puts the main
`.py`, `--py-files`, `--files`, `--archives` and `--jars` into an Azurite container under
`spark.kubernetes.file.upload.path=abfs://...`; pyspark 4.3.0's driver, in a pod of the node
agent, downloads them through the image's hadoop-azure (testenv/hadoop_azure.py), whose ABFS
on Hadoop 3.5 talks the Blob API Azurite serves (Azurite has no ADLS Gen2 `dfs` endpoint).

The account key is `spark.hadoop.fs.azure.account.key.<host>=${env.AZURE_ACCOUNT_KEY}`:
the driver and its executor get the variable from a Kubernetes Secret through
`spark.kubernetes.{driver,executor}.secretKeyRef.*` and Hadoop expands it there; our upload
expands it from the worker's environment, as Hadoop does in spark-submit's JVM. The executor
imports the module, reads the `--files` text and the unpacked archive it fetched from the
driver, and reads the uploaded text itself straight from the container. Each partition's line
names the executor pod it ran on; the uploads go with the driver, and the key appears in no
spark.properties, ConfigMap, pod, task log or XCom. The steps are the S3 test's
(tests/runtime/object_store_app.py)."""

from __future__ import annotations

import json
import secrets

import pytest

from airflow_provider_sparkk8s.submission.arguments import load_java_properties
from testenv import hadoop_azure
from testenv.admin_client import AdminHttp
from testenv.azurite import Azurite
from testenv.hadoop_aws import hadoop_version
from testenv.runtime_image import SPARK_VERSION, distribution_jars, pyspark_venv
from tests.runtime.object_store_app import check_the_run, operator_app, run_the_operator, write_app
from tests.runtime.test_s3a_uploads_real_spark import create_secret
from tests.support.real_spark import BASE_CONF
from tests.triggers.spark_pods import connection_for

pytestmark = [
    pytest.mark.controlplane,
    pytest.mark.timeout(600),
    # Seen four times at load 15-38 (2 cores): the driver pod read every upload from Azurite
    # and ran the uploaded main .py; then its SparkContext failed to reach the API server at
    # 10 s (once), or (with 60 s timeouts, and with ABFS's JSSE channel) the driver ran past
    # 600 s and 900 s with no log; the S3 test beside it finished. Not explained yet.
    pytest.mark.skip(reason="issue 27: the driver stalls after its ABFS downloads"),
]

SECRET = "s3-credentials"  # create_secret's name; it holds the Azure key here
KEY_VAR = "AZURE_ACCOUNT_KEY"
KEY_REF = "${env.AZURE_ACCOUNT_KEY}"  # Hadoop expands it where the key is read


def test_driver_and_executor_read_the_azure_uploads_with_the_key_from_a_secret(
    runtime_plane, runtime_namespace, submitter, azurite: Azurite, monkeypatch, capfd, tmp_path
):  # type: ignore[no-untyped-def]
    namespace, azure = runtime_namespace, azurite
    hadoop = hadoop_version(distribution_jars(pyspark_venv(SPARK_VERSION)))
    assert hadoop is not None and hadoop_azure.reads_blob_endpoint(hadoop), hadoop
    admin = AdminHttp.from_kubeconfig(runtime_plane.admin_kubeconfig)
    container = azure.make_container("apps-" + secrets.token_hex(3))
    marker = secrets.token_hex(6)
    paths = write_app(tmp_path / "src", marker)
    create_secret(admin, namespace, {"account-key": azure.account_key})
    monkeypatch.setenv(KEY_VAR, azure.account_key)  # the worker's: our upload reads it
    host = f"{azure.account}.dfs.core.windows.net"
    upload_path = f"abfs://{container}@{host}/uploads"
    abfs_conf = hadoop_azure.abfs_emulator_conf(f"127.0.0.1:{azure.port}")
    key_conf = f"spark.hadoop.fs.azure.account.key.{host}"
    conf = {
        **BASE_CONF,
        "spark.executor.instances": "1",
        "spark.kubernetes.file.upload.path": upload_path,
        key_conf: KEY_REF,
        **abfs_conf,
        **{
            f"spark.kubernetes.{role}.secretKeyRef.{KEY_VAR}": f"{SECRET}:account-key"
            for role in ("driver", "executor")
        },
    }
    result, xcom, log, seen = run_the_operator(
        "azure",
        operator_app(paths, marker, upload_path),
        lambda: azure.objects(container),
        admin,
        capfd,
        conf=conf,
        namespace=namespace,
        kubernetes_conn_id=connection_for(monkeypatch, submitter),
    )

    check_the_run(log, seen, paths, marker, azure.objects(container))

    # The key: a reference in the pods and in spark.properties, its value nowhere.
    driver_pod = seen.driver_pod()
    for pod in [driver_pod, *(seen.pods[name] for name in seen.executor_pods())]:
        env = {item["name"]: item for item in pod["spec"]["containers"][0]["env"]}
        assert env[KEY_VAR] == {
            "name": KEY_VAR,
            "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "account-key"}},
        }
    (conf_map_name,) = (
        v["configMap"]["name"] for v in driver_pod["spec"]["volumes"] if "configMap" in v
    )
    properties = load_java_properties(seen.configmaps[conf_map_name]["data"]["spark.properties"])
    assert properties[key_conf] == KEY_REF
    assert {key: properties[key] for key in abfs_conf} == abfs_conf
    assert properties["spark.submit.pyFiles"].startswith(f"{upload_path}/spark-upload-")
    assert azure.account_key not in json.dumps([seen.configmaps, seen.pods])
    assert azure.account_key not in log
    assert azure.account_key not in json.dumps([result, xcom], default=str)
