"""The Connect server planned through the feature steps (no I/O: plan_server renders only)."""

from __future__ import annotations

import base64
import json

import pytest

from airflow_provider_sparkk8s.application.connect.server_rules import Lifetime
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.connect import server_lifecycle as connect_server

TOKEN = "tok-" + "x" * 28


def plan(token: str | None = TOKEN, version: str = "4.3.0", **conf: str):
    return connect_server.plan_server(
        {"spark.kubernetes.namespace": "ns1", "spark.app.name": "connect", **conf},
        master="k8s://https://api.example:6443",
        spark_version=version,
        image=f"sparkk8s/spark:{version}",
        lifetime=Lifetime(60, 600),
        token=token,
    )


def test_the_driver_runs_the_connect_server_class_with_its_executors_on_kubernetes():
    planned = plan()
    pod = planned.rendered.driver_pod
    spark = next(c for c in pod["spec"]["containers"] if c["name"] == "spark-kubernetes-driver")
    assert spark["args"][-3:] == [
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "spark-internal",
    ]
    properties = planned.rendered.system_properties
    assert properties["spark.master"] == "k8s://https://api.example:6443"
    assert properties["spark.connect.grpc.binding.port"] == "15002"
    (service,) = [o for o in planned.rendered.resources if o["kind"] == "Service"]
    assert {"name": "spark-connect", "port": 15002, "targetPort": 15002, "appProtocol": "grpc"} in (
        service["spec"]["ports"]
    )
    assert connect_server.service_name(planned.rendered) == service["metadata"]["name"]
    assert connect_server.grpc_port(planned) == 15002


def test_the_token_is_only_in_the_secret_the_driver_reads_its_env_from():
    planned = plan()
    objects = planned.rendered.objects
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    values = [base64.b64decode(v).decode() for v in secret["data"].values()]
    assert values == [TOKEN]
    others = [o for o in objects if o["kind"] != "Secret"]
    assert TOKEN not in json.dumps(others)
    assert TOKEN not in connect_server.submission.dry_run(planned).yaml
    spark = next(
        c
        for c in planned.rendered.driver_pod["spec"]["containers"]
        if c["name"] == "spark-kubernetes-driver"
    )
    (env,) = [e for e in spark["env"] if e["name"] == "SPARK_CONNECT_AUTHENTICATE_TOKEN"]
    assert env["valueFrom"]["secretKeyRef"]["name"] == secret["metadata"]["name"]


def test_without_a_token_there_is_no_secret():
    assert not [o for o in plan(token=None).rendered.objects if o["kind"] == "Secret"]


def test_the_watcher_runs_its_program_beside_the_driver():
    pod = plan().rendered.driver_pod
    (watcher,) = [c for c in pod["spec"]["containers"] if c["name"] == "connect-idle-watch"]
    assert watcher["command"][:2] == ["python3", "-c"]
    assert "def verdict" in watcher["command"][2]
    assert pod["spec"]["activeDeadlineSeconds"] == 660


def test_bad_input_fails_before_any_request():
    with pytest.raises(SparkConfError, match=r"4\.0 or later"):
        plan(version="3.5.9")
    with pytest.raises(SparkConfError, match=r"spark\.connect\.authenticate\.token"):
        plan(**{"spark.connect.authenticate.token": "in-clear"})
