"""The secure preset on real Spark (issue 44, item 4): Spark Pi under `"preset": "secure"`
(the `spark_k8s` connection's policy) on 3.5.9 and 4.3.0, on the real node, in a namespace
that enforces Pod Security Admission's `restricted` profile, so kube-apiserver itself
refuses a driver or executor pod that breaks it.

One application per line (a module fixture); every assertion reads that run:
- it succeeds (its executors dialled the driver: with `saslFallback=false` nothing but
  Spark's AES-based authentication and encryption could have let them in);
- the driver's effective conf (its log, `spark.logConf=true`) has authentication, RPC
  encryption (AES-GCM: both lines have it) and I/O encryption on, the secret read from a file;
- an executor's: its start-up options (the pod's `SPARK_JAVA_OPT_*`, Spark's executor start-up
  conf, which its SecurityManager reads before it fetches the rest from the driver) and its
  own log line say the same, and no `_SPARK_AUTH_SECRET` env holds the value;
- the secret (read from the driver's Secret) is in no ConfigMap, pod, pod log, task log, XCom
  or rendered field.
The driver and the executors are kept to the end (keep_pod, deleteOnTermination=false) so
their logs can be read; the namespace goes with the module."""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from testenv.admin_client import AdminHttp
from testenv.controlplane import ControlPlane
from testenv.fakes import FakeTaskInstance
from testenv.harness.waiting import wait_for
from testenv.real_spark import BASE_CONF, PI, REAL_SPARK_TIMINGS, SMALL_PODS, submitter_kubeconfig
from testenv.realnode.node import RealNode
from testenv.runtime_image import image_name
from tests.runtime.object_store_app import Observer

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(900)]

PSA = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
ON = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.saslFallback": "false",
    "spark.network.crypto.cipher": "AES/GCM/NoPadding",
    "spark.network.crypto.authEngineVersion": "2",
}
SECRET_FILE = "/opt/spark/auth-secret/spark-auth-secret"


@dataclass
class SecureRun:
    version: str
    result: dict[str, Any]
    xcom: dict[str, Any]
    task_log: str
    rendered: str  # the operator's template fields, as rendered
    seen: Observer
    secret: str
    secret_name: str
    executors_secret: str  # the same key as the executors take it: base64 of the file's bytes
    driver_log: str
    executor: dict[str, Any]  # one executor pod as it ran
    executor_log: str


@pytest.fixture(scope="module", params=["3.5.9", "4.3.0"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def restricted_namespace(admin: AdminHttp, name: str) -> None:
    admin.json("POST", "/api/v1/namespaces", {"metadata": {"name": name, "labels": PSA}})
    wait_for(
        lambda: admin.raw("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
        30,
        f"service account {name}/default",
    )


def pod_log(admin: AdminHttp, namespace: str, pod: str) -> str:
    status, data = admin.raw("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log")
    assert status == 200, data[:500]
    return data.decode(errors="replace")


def first_executor_log(admin: AdminHttp, namespace: str) -> str:
    path = f"/api/v1/namespaces/{namespace}/pods?labelSelector=spark-role%3Dexecutor"
    names = sorted(pod["metadata"]["name"] for pod in admin.json("GET", path)["items"])
    if not names:
        return "no executor pod"
    text = pod_log(admin, namespace, names[0])
    start = max(0, text.find("Exception") - 3000)  # its first exception, with what led there
    return f"{names[0]}'s log:\n" + text[start : start + 9000]


@pytest.fixture(scope="module")
def secure_run(
    real_node: RealNode,
    real_plane: ControlPlane,
    version: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[SecureRun]:
    real_node.ensure_spark_image(version)
    admin = AdminHttp.from_kubeconfig(real_plane.admin_kubeconfig)
    namespace = f"secure-{version.replace('.', '')}-{secrets.token_hex(3)}"
    restricted_namespace(admin, namespace)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    try:
        kubeconfig = submitter_kubeconfig(
            real_plane, namespace, tmp_path_factory.mktemp("secure") / "submitter.kubeconfig"
        )
        conn_id = f"spark_k8s_secure_{secrets.token_hex(4)}"
        extra = {"kube_config_path": str(kubeconfig), "policy": {"preset": "secure"}}
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(
                f"AIRFLOW_CONN_{conn_id.upper()}",
                json.dumps({"conn_type": "spark_k8s", "extra": extra}),
            )
            operator = SparkK8sSubmitOperator(
                task_id="secure_pi",
                application=PI,
                application_args=["2", "20000"],
                name="secure-pi",
                conf={
                    **BASE_CONF,
                    **SMALL_PODS,
                    "spark.kubernetes.container.image": image_name(version),
                    "spark.executor.instances": "1",
                    "spark.logConf": "true",  # the driver logs its effective conf
                    # The executors stay for their logs; the namespace removes them.
                    "spark.kubernetes.executor.deleteOnTermination": "false",
                },
                namespace=namespace,
                kubernetes_conn_id=conn_id,
                spark_version=version,
                deferrable=False,
                poll_interval=1.0,
                startup_timeout=300,
                on_finish_action="keep_pod",
                log_tail_lines=2000,
            )
            ti = FakeTaskInstance(task_id="secure_pi")
            started = time.monotonic()
            capture.read_global_capture()  # what came before is not this run's task log
            with Observer(admin, namespace, dict) as seen:
                try:
                    result = operator.execute({"ti": ti})
                except Exception as error:  # the executors' side of a failure: their log
                    raise AssertionError(first_executor_log(admin, namespace)) from error
            task_log = "".join(capture.read_global_capture())
        REAL_SPARK_TIMINGS[f"secure preset {version}: operator execute"] = (
            time.monotonic() - started
        )
        assert result["state"] == "succeeded", task_log[-4000:]
        app_id = result["application_id"]
        secret = admin.json("GET", f"/api/v1/namespaces/{namespace}/secrets/{app_id}-auth")
        value = base64.b64decode(secret["data"]["spark-auth-secret"]).decode()
        executors_secret = base64.b64decode(secret["data"]["spark-auth-secret-base64"]).decode()
        driver = seen.driver_pod()["metadata"]["name"]
        executor_name = min(seen.executor_pods())
        executor = admin.json("GET", f"/api/v1/namespaces/{namespace}/pods/{executor_name}")
        rendered = {name: getattr(operator, name, None) for name in operator.template_fields}
        yield SecureRun(
            version=version,
            result=result,
            xcom=ti.xcom,
            task_log=task_log,
            rendered=json.dumps(rendered, default=str),
            seen=seen,
            secret=value,
            secret_name=f"{app_id}-auth",
            executors_secret=executors_secret,
            driver_log=pod_log(admin, namespace, driver),
            executor=executor,
            executor_log=pod_log(admin, namespace, executor_name),
        )
    finally:
        admin.raw("DELETE", f"/api/v1/namespaces/{namespace}")


def driver_conf(log: str) -> dict[str, str]:
    """The `Spark configuration:` block that `spark.logConf` makes the driver log."""
    block = log[log.index("Spark configuration:") :].splitlines()[1:]
    conf: dict[str, str] = {}
    for line in block:
        key, sep, value = line.partition("=")
        if not sep or not key.startswith("spark."):
            break
        conf[key] = value
    return conf


def test_pi_succeeds_in_a_restricted_namespace(secure_run: SecureRun) -> None:
    assert secure_run.result["state"] == "succeeded"
    assert "Pi is roughly 3." in secure_run.driver_log, secure_run.driver_log[-3000:]
    pods = [secure_run.seen.driver_pod(), secure_run.executor]
    for pod in pods:
        assert pod["spec"]["securityContext"] == {
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        spark = pod["spec"]["containers"][-1]
        assert spark["securityContext"]["allowPrivilegeEscalation"] is False
        assert spark["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_driver_runs_with_authentication_and_encryption_on(secure_run: SecureRun) -> None:
    conf = driver_conf(secure_run.driver_log)
    assert {key: conf.get(key) for key in ON} == ON, conf
    assert conf["spark.io.encryption.enabled"] == "true"
    assert "spark.authenticate.secret.file" in conf  # its value: redacted by Spark
    assert "spark.authenticate.secret" not in conf
    assert "SecurityManager: authentication enabled" in secure_run.driver_log


def test_an_executor_runs_with_authentication_and_encryption_on(secure_run: SecureRun) -> None:
    (spark,) = [c for c in secure_run.executor["spec"]["containers"] if c.get("env")]
    env = {item["name"]: item for item in spark["env"]}
    # Spark's own variable, from the Secret: no literal (Spark writes one without a file).
    assert env["_SPARK_AUTH_SECRET"] == {
        "name": "_SPARK_AUTH_SECRET",
        "valueFrom": {
            "secretKeyRef": {"name": secure_run.secret_name, "key": "spark-auth-secret-base64"}
        },
    }
    options = {
        item["value"][2:].partition("=")[0]: item["value"][2:].partition("=")[2]
        for name, item in env.items()
        if name.startswith("SPARK_JAVA_OPT_") and item.get("value", "").startswith("-D")
    }
    assert {key: options.get(key) for key in ON} == ON, options
    assert options["spark.authenticate.secret.file"] == SECRET_FILE
    assert "SecurityManager: authentication enabled" in secure_run.executor_log


def test_the_secret_is_only_in_its_secret(secure_run: SecureRun) -> None:
    assert len(secure_run.secret) == 64  # 256 bits as hex, drawn for this application
    seen = secure_run.seen
    assert "Pi is roughly" in secure_run.task_log  # the task log was captured
    for value in (secure_run.secret, secure_run.executors_secret):
        assert value not in json.dumps(seen.configmaps)
        assert value not in json.dumps([seen.pods, secure_run.executor])
        assert value not in secure_run.driver_log and value not in secure_run.executor_log
        assert value not in secure_run.task_log
        assert value not in json.dumps([secure_run.result, secure_run.xcom], default=str)
        assert value not in secure_run.rendered
