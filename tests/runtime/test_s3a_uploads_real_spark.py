"""Real Spark reads what the operator uploaded to S3: the operator (worker-side wait, an `aws`
Airflow connection for its own uploads) puts the main `.py`, `--py-files`, `--files`,
`--archives` and `--jars` into a versitygw bucket under `spark.kubernetes.file.upload.path=
s3a://...`; pyspark 4.3.0's driver, in a pod of the real node, downloads them through the
image's S3A connector (testenv/fetch_hadoop_aws.sh) with the `spark.hadoop.fs.s3a.*` options
it was given (path-style access, region, and the endpoint where the pods reach the server:
the node IP's port forwarded to its loopback one, `RealNode.expose_host_port`; the
operator's upload goes through its connection's loopback endpoint) and credentials from a
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

import pytest

from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.real_spark import BASE_CONF, SMALL_PODS
from tests.runtime.object_store_app import check_the_run, operator_app, run_the_operator, write_app
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]

SECRET = "s3-credentials"
S3A = "spark.hadoop.fs.s3a."


def create_secret(admin: AdminHttp, namespace: str, data: dict[str, str]) -> None:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET}, "data": encoded}
    admin.request("POST", f"/api/v1/namespaces/{namespace}/secrets", json=body)


@pytest.fixture
def admin(real_plane: ControlPlane) -> AdminHttp:
    return AdminHttp.from_kubeconfig(real_plane.admin_kubeconfig)


def test_driver_and_executor_read_the_s3_uploads_with_credentials_from_a_secret(
    real_node, real_namespace, admin, real_submitter, s3_server, monkeypatch, capfd, tmp_path
):  # type: ignore[no-untyped-def]
    namespace, s3 = real_namespace, s3_server
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
        **SMALL_PODS,
        "spark.executor.instances": "1",
        "spark.kubernetes.file.upload.path": upload_path,
        f"{S3A}endpoint": f"http://{real_node.expose_host_port(s3.port)}",
        f"{S3A}endpoint.region": "us-east-1",  # else S3A signs for us-east-2 off AWS
        f"{S3A}path.style.access": "true",
        **{
            f"spark.kubernetes.{role}.secretKeyRef.{var}": f"{SECRET}:{key}"
            for role in ("driver", "executor")
            for var, key in refs.items()
        },
    }
    result, xcom, log, seen = run_the_operator(
        "s3a",
        operator_app(paths, marker, upload_path),
        lambda: s3.objects(bucket),
        admin,
        capfd,
        conf=conf,
        namespace=namespace,
        kubernetes_conn_id=connection_for(monkeypatch, real_submitter),
        upload_conn_id="s3_uploads",
    )

    # What was uploaded, read by the driver and its executor (whose own S3A client read the
    # bucket with the Secret's credentials), and gone with the driver.
    check_the_run(log, seen, paths, marker, s3.objects(bucket))

    # The credentials: references in the pods, values nowhere.
    driver_pod = seen.driver_pod()
    for pod in [driver_pod, *(seen.pods[name] for name in seen.executor_pods())]:
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
        assert value not in json.dumps([result, xcom], default=str)
