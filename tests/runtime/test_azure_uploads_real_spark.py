"""Real Spark reads what the operator uploaded to Azure Blob storage: the operator (worker-side
wait, no upload connection: hadoop-azure's own keys, as spark-submit reads them) puts the main
`.py`, `--py-files`, `--files`, `--archives` and `--jars` into an Azurite container under
`spark.kubernetes.file.upload.path=abfs://...`; the driver, in a pod of the real node
(testenv/realnode: the real kubelet, containerd, runc), downloads them through the image's
hadoop-azure (testenv/hadoop_azure.py), whose ABFS from Hadoop 3.4.2 talks the Blob API
Azurite serves (Azurite has no ADLS Gen2 `dfs` endpoint).

The account key is `spark.hadoop.fs.azure.account.key.<host>=${env.AZURE_ACCOUNT_KEY}`:
the driver and its executor get the variable from a Kubernetes Secret through
`spark.kubernetes.{driver,executor}.secretKeyRef.*` and Hadoop expands it there; our upload
expands it from the worker's environment, as Hadoop does in spark-submit's JVM. The endpoint
is such a reference too: the worker reaches Azurite on loopback, the pods through the node's
forward of the same port (`RealNode.expose_host_port`), so each side's variable holds its own
address (in a cluster both would name the same endpoint). The executor imports the module,
reads the `--files` text and the unpacked archive it fetched from the driver, and reads the
uploaded text itself straight from the container. Each partition's line names the executor
pod it ran on; the uploads go with the driver, and the key appears in no spark.properties,
ConfigMap, pod, task log or XCom. The steps are the S3 test's
(tests/runtime/object_store_app.py)."""

from __future__ import annotations

import json
import secrets

import pytest

from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from testenv import hadoop_azure
from testenv.admin_client import AdminHttp
from testenv.azurite import Azurite
from testenv.hadoop_aws import hadoop_version
from testenv.real_spark import BASE_CONF, SMALL_PODS
from testenv.realnode.config import NODE_IP
from testenv.realnode.node import RealNode
from testenv.runtime_image import distribution_jars, image_name, pyspark_venv
from tests.runtime.object_store_app import check_the_run, operator_app, run_the_operator, write_app
from tests.runtime.test_s3a_uploads_real_spark import create_secret
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

SECRET = "s3-credentials"  # create_secret's name; it holds the Azure key here
KEY_VAR = "AZURE_ACCOUNT_KEY"
ENDPOINT_VAR = "AZURE_BLOB_ENDPOINT"
KEY_REF = "${env.AZURE_ACCOUNT_KEY}"  # Hadoop expands them where the keys are read
ENDPOINT_REF = "${env.AZURE_BLOB_ENDPOINT}"
# Hadoop 3.5.0's ABFS (Spark 4.2, 4.3) starts two non-daemon threads per file system for its
# metrics (AbfsMetricsManager's scheduler, on by default) that stop only when the file system
# closes, in a shutdown hook: the driver's JVM then never exits after the program ends (seen:
# jstack of a stalled driver, `pool-5-thread-1` and `pool-7-thread-1` parked).
NO_ABFS_METRICS = {"spark.hadoop.fs.azure.metrics.collection.enabled": "false"}
# One line per Hadoop whose ABFS has the Blob API client: 3.4.2 (4.1.4) and 3.5.0 (4.2.1 and
# 4.3.0, the same connector: 4.3.0 holds both), the latter with its metrics threads.
LINES = ["4.1.4", "4.3.0"]


# Hadoop 3.3.4 (3.5.9) and 3.4.1 (4.0.5): no ABFS Blob client, so WASB, whose code is the same
# in both releases; the oldest line runs it.
WASB_LINES = ["3.5.9"]


def hadoop_of(version: str) -> tuple[str, tuple[int, ...]]:
    hadoop = hadoop_version(distribution_jars(pyspark_venv(version)))
    assert hadoop is not None, version
    return hadoop, tuple(int(part) for part in hadoop.split(".")[:2])


@pytest.mark.parametrize("version", LINES)
def test_driver_and_executor_read_the_azure_uploads_with_the_key_from_a_secret(
    version: str, real_node: RealNode, azurite: Azurite, app_run
):  # type: ignore[no-untyped-def]
    hadoop, numbers = hadoop_of(version)
    assert hadoop_azure.reads_blob_endpoint(hadoop), hadoop
    container = azurite.make_container("apps-" + secrets.token_hex(3))
    host = f"{azurite.account}.dfs.core.windows.net"
    extra = NO_ABFS_METRICS if numbers >= (3, 5) else {}
    app_run(version, f"abfs://{container}@{host}/uploads", host, container, extra)


@pytest.mark.parametrize("version", WASB_LINES)
def test_a_wasb_driver_and_executor_read_the_uploads_at_a_name_of_the_nodes_dns(
    version: str, real_node: RealNode, azurite: Azurite, app_run
):  # type: ignore[no-untyped-def]
    """WASB takes its endpoint from the path's host alone (`http://<authority>`, the account
    its first label, the port kept: hadoop-azure's AzureNativeFileSystemStore), and Azurite
    reads the account from such a production-style host. So the path names
    `<account>.blob.localhost:<port>`, which the node's cluster DNS (dnsmasq) answers with the
    node IP, where the node forwards that port to Azurite. Our upload still goes by the ABFS
    endpoint keys (loopback), which WASB ignores."""
    container = azurite.make_container("apps-" + secrets.token_hex(3))
    name = f"{azurite.account}.blob.localhost"
    records = real_node.paths.dns_hosts / f"wasb-{secrets.token_hex(3)}"
    partial = records.with_name("." + records.name)
    partial.write_text(f"{NODE_IP}\t{name}\n")
    partial.rename(records)  # dnsmasq picks a new file of its hosts dir up as it lands
    host = f"{name}:{azurite.port}"
    try:
        app_run(version, f"wasb://{container}@{host}/uploads", host, container, {})
    finally:
        records.unlink(missing_ok=True)


@pytest.fixture
def app_run(
    real_node, real_plane, real_namespace, real_submitter, azurite, monkeypatch, capfd, tmp_path
):  # type: ignore[no-untyped-def]
    """Runs the program on `version` with uploads under `upload_path` (its host `host`, in
    Azurite's `container`) and checks what the driver and executor read, the clean-up, and
    where the key went."""

    def run(
        version: str, upload_path: str, host: str, container: str, extra: dict[str, str]
    ) -> None:
        namespace, azure = real_namespace, azurite
        real_node.ensure_spark_image(version)
        admin = AdminHttp.from_kubeconfig(real_plane.admin_kubeconfig)
        marker = secrets.token_hex(6)
        paths = write_app(tmp_path / "src", marker)
        create_secret(admin, namespace, {"account-key": azure.account_key})
        monkeypatch.setenv(KEY_VAR, azure.account_key)  # the worker's: our upload reads it
        monkeypatch.setenv(ENDPOINT_VAR, f"127.0.0.1:{azure.port}")  # the worker's way there
        in_pods = real_node.expose_host_port(azure.port)  # the pods' way to the same server
        abfs_conf = hadoop_azure.abfs_emulator_conf(ENDPOINT_REF)
        key_conf = f"spark.hadoop.fs.azure.account.key.{host}"
        conf = {
            **BASE_CONF,
            **SMALL_PODS,
            "spark.kubernetes.container.image": image_name(version),
            "spark.executor.instances": "1",
            "spark.kubernetes.file.upload.path": upload_path,
            key_conf: KEY_REF,
            **abfs_conf,
            **{
                f"spark.kubernetes.{role}.secretKeyRef.{KEY_VAR}": f"{SECRET}:account-key"
                for role in ("driver", "executor")
            },
            **extra,
            f"spark.kubernetes.driverEnv.{ENDPOINT_VAR}": in_pods,
            f"spark.executorEnv.{ENDPOINT_VAR}": in_pods,
        }
        result, xcom, log, seen = run_the_operator(
            "azure" + version.replace(".", ""),  # each line its own timing row
            operator_app(paths, marker, upload_path),
            lambda: azure.objects(container),
            admin,
            capfd,
            conf=conf,
            namespace=namespace,
            kubernetes_conn_id=connection_for(monkeypatch, real_submitter),
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
            assert env[ENDPOINT_VAR] == {"name": ENDPOINT_VAR, "value": in_pods}
        (conf_map_name,) = (
            v["configMap"]["name"] for v in driver_pod["spec"]["volumes"] if "configMap" in v
        )
        data = seen.configmaps[conf_map_name]["data"]["spark.properties"]
        properties = load_java_properties(data)
        assert properties[key_conf] == KEY_REF
        assert {key: properties[key] for key in abfs_conf} == abfs_conf
        assert properties["spark.submit.pyFiles"].startswith(f"{upload_path}/spark-upload-")
        assert azure.account_key not in json.dumps([seen.configmaps, seen.pods])
        assert azure.account_key not in log
        assert azure.account_key not in json.dumps([result, xcom], default=str)

    return run
