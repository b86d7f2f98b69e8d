"""Secret confs against the real API server, through the submission service the operator and
the CLI share: with spark.kubernetes.sparkk8s.secretConfs.enabled the Secret exists, is owned
by the driver pod (the garbage collector removes it with the pod), and neither the ConfigMap
nor the pod holds a secret value; off, one warning names the keys (never the values); a
submission that fails half-way removes the Secret with everything else."""

from __future__ import annotations

import base64
import json
import secrets as random
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.submission.secret_confs import ENABLED_KEY
from testenv.harness.waiting import wait_for

pytestmark = pytest.mark.controlplane

PLANTED = {
    "spark.hadoop.fs.s3a.secret.key": f"planted-s3-{random.token_hex(4)}",
    "spark.kubernetes.driverEnv.DB_PASSWORD": f"planted-db-{random.token_hex(4)}",
}


class Recorder:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.infos: list[str] = []

    def info(self, msg: str, *args: Any) -> None:
        self.infos.append(msg % args)

    def warning(self, msg: str, *args: Any) -> None:
        self.warnings.append(msg % args)


def planned(server: str, namespace: str, tmp_path: Path, *conf: str) -> submission.Planned:
    argv = [
        "--master", f"k8s://{server}", "--deploy-mode", "cluster",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.1",
        "--conf", f"spark.kubernetes.namespace={namespace}",
        "--conf", "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/run-ms=60000",
        *[arg for key, value in PLANTED.items() for arg in ("--conf", f"{key}={value}")],
        *[arg for entry in conf for arg in ("--conf", entry)],
        "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/e.jar",
    ]  # fmt: skip
    request = submission.SubmissionRequest(argv, environ={"SPARK_USER": "alice"}, cwd=str(tmp_path))
    arguments = submission.parse(request)
    return submission.plan(arguments, spark_version="4.0.1", environ={"SPARK_USER": "alice"})


def get(admin: KubeClient, namespace: str, plural: str, name: str) -> dict | None:
    try:
        return admin.request("GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}")
    except KubeApiError as error:
        if error.status == 404:
            return None
        raise


def storage_for(path: str | None, properties: Any) -> Storage:
    return Storage.from_spark_conf(properties)


def test_secret_confs_live_in_a_secret_owned_by_the_driver(  # type: ignore[no-untyped-def]
    control_plane, admin: KubeClient, namespace: str, tmp_path: Path
) -> None:
    plan = planned(control_plane.server, namespace, tmp_path, f"{ENABLED_KEY}=true")
    log = Recorder()
    sent = submission.submit(admin, plan, storage_for, log)
    secret_name = plan.rendered.pre_resources[0]["metadata"]["name"]
    assert f"Secret/{secret_name}" in sent.created
    pod = get(admin, namespace, "pods", sent.driver_pod_name)
    secret = get(admin, namespace, "secrets", secret_name)
    conf_map = get(admin, namespace, "configmaps", plan.rendered.conf_map_name)
    assert pod is not None and secret is not None and conf_map is not None
    assert secret["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": sent.driver_pod_name,
            "uid": pod["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == PLANTED
    stored = json.dumps(conf_map) + json.dumps(pod)
    for value in PLANTED.values():
        assert value not in stored
    assert "${env.SPARKK8S_CONF_SPARK_HADOOP_FS_S3A_SECRET_KEY}" in json.dumps(conf_map)
    assert log.warnings == []  # every planted key could move
    # Owned by the driver: the garbage collector takes the Secret with the pod.
    admin.request(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/pods/{sent.driver_pod_name}",
        params={"gracePeriodSeconds": 0},
    )
    wait_for(
        lambda: get(admin, namespace, "secrets", secret_name) is None,
        60,
        "the garbage collector to remove the Secret with its driver",
    )


def test_off_by_default_one_warning_names_the_keys_never_the_values(  # type: ignore[no-untyped-def]
    control_plane, admin: KubeClient, namespace: str, tmp_path: Path
) -> None:
    plan = planned(control_plane.server, namespace, tmp_path)
    log = Recorder()
    submission.submit(admin, plan, storage_for, log)
    (warning,) = log.warnings
    assert f"ConfigMap {plan.rendered.conf_map_name} holds secret-looking confs in clear" in warning
    assert "spark.hadoop.fs.s3a.secret.key, spark.kubernetes.driverEnv.DB_PASSWORD" in warning
    assert f"set {ENABLED_KEY}=true" in warning
    conf_map = get(admin, namespace, "configmaps", plan.rendered.conf_map_name)
    for value in PLANTED.values():
        assert value not in warning
        assert value in json.dumps(conf_map)  # spark-submit's ConfigMap, unchanged
    assert [o["kind"] for o in plan.rendered.pre_resources] == []


def test_a_submission_failing_half_way_removes_the_secret(  # type: ignore[no-untyped-def]
    control_plane, admin: KubeClient, namespace: str, tmp_path: Path
) -> None:
    plan = planned(control_plane.server, namespace, tmp_path, f"{ENABLED_KEY}=true")
    # An immutable ConfigMap of the same name: the last apply (after the Secret and the pod)
    # is refused with 422.
    admin.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={
            "metadata": {"name": plan.rendered.conf_map_name},
            "immutable": True,
            "data": {"other": "x"},
        },
    )
    with pytest.raises(SubmissionError) as caught:
        submission.submit(admin, plan, storage_for, Recorder())
    secret_name = plan.rendered.pre_resources[0]["metadata"]["name"]
    message = str(caught.value)
    assert f"could not apply ConfigMap/{plan.rendered.conf_map_name}" in message
    assert message.split("rolled back: ", 1)[1].endswith(
        f"Pod/{plan.rendered.driver_pod_name}, Secret/{secret_name}"
    )
    assert get(admin, namespace, "secrets", secret_name) is None
    pod = get(admin, namespace, "pods", plan.rendered.driver_pod_name)
    assert pod is None or pod["metadata"].get("deletionTimestamp")
    for value in PLANTED.values():
        assert value not in str(caught.value)
