"""The Connect server's pure rules: conf, template, URL, readiness."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.application.connect import server_rules as rules
from airflow_provider_sparkk8s.errors import SparkConfError


def test_server_conf_binds_the_pod_address_and_turns_secret_confs_on_with_a_token():
    conf = rules.server_conf({"spark.executor.instances": "2"}, (4, 3, 0), authenticated=True)
    assert conf[rules.PORT_KEY] == "15002"
    assert conf[rules.ADDRESS_KEY] == "${env:SPARK_DRIVER_BIND_ADDRESS}"
    assert conf["spark.kubernetes.sparkk8s.secretConfs.enabled"] == "true"
    assert conf["spark.executor.instances"] == "2"
    unauthenticated = rules.server_conf({}, (4, 0, 0), authenticated=False)
    assert "spark.kubernetes.sparkk8s.secretConfs.enabled" not in unauthenticated


def test_a_users_port_is_kept():
    assert (
        rules.server_conf({rules.PORT_KEY: "16000"}, (4, 1, 0), authenticated=False)[rules.PORT_KEY]
        == "16000"
    )


@pytest.mark.parametrize("key", [rules.TOKEN_KEY, "spark.kubernetes.driverEnv." + rules.TOKEN_ENV])
def test_a_token_in_the_conf_is_refused_without_echoing_it(key):
    with pytest.raises(SparkConfError) as refused:
        rules.server_conf({key: "hunter2"}, (4, 3, 0), authenticated=True)
    assert key in str(refused.value) and "hunter2" not in str(refused.value)


def test_spark_before_4_has_no_connect_server():
    with pytest.raises(SparkConfError, match=r"4\.0 or later"):
        rules.server_conf({}, (3, 5, 9), authenticated=False)


@pytest.mark.parametrize(
    ("idle", "lifetime", "match"),
    [(0, 60, "idle_timeout"), (60, -1, "max_lifetime"), (120, 60, "at most max_lifetime")],
)
def test_lifetimes_are_checked(idle, lifetime, match):
    with pytest.raises(SparkConfError, match=match):
        rules.Lifetime(idle, lifetime).check()


def test_the_template_carries_the_watcher_and_the_clusters_deadline():
    template = rules.driver_template("img:4.3.0", rules.Lifetime(30, 600), "print(1)", 4040)
    spark, watcher = template["spec"]["containers"]
    assert spark["name"] == "spark-kubernetes-driver"
    assert watcher["name"] == rules.WATCHER_CONTAINER
    assert watcher["image"] == "img:4.3.0"
    assert watcher["command"] == ["python3", "-c", "print(1)"]
    env = {e["name"]: e.get("value") for e in watcher["env"]}
    assert env["IDLE_TIMEOUT_SECONDS"] == "30" and env["MAX_LIFETIME_SECONDS"] == "600"
    assert template["spec"]["activeDeadlineSeconds"] == 600 + rules.DEADLINE_MARGIN_SECONDS


def test_urls():
    assert rules.connect_url("h.ns.svc", 15002) == "sc://h.ns.svc:15002"
    assert rules.url_with_params("sc://h:1", {"user_id": "a b"}) == "sc://h:1/;user_id=a%20b"
    assert rules.url_with_params("sc://h:1/;x=1", {}) == "sc://h:1"
    with pytest.raises(SparkConfError, match="sc://"):
        rules.url_with_params("http://h:1", {})


def _pod(phase, ip=None, deleting=False, terminated=None):
    status = {"phase": phase}
    if ip:
        status["podIP"] = ip
    if terminated:
        status["containerStatuses"] = [
            {"name": "spark-kubernetes-driver", "state": {"terminated": terminated}}
        ]
    metadata = {"name": "srv-driver"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return {"metadata": metadata, "status": status}


def test_readiness():
    assert rules.readiness(_pod("Pending"), None) == rules.Waiting("the driver pod is Pending")
    assert isinstance(rules.readiness(_pod("Running", "10.0.0.5"), False), rules.Waiting)
    assert rules.readiness(_pod("Running", "10.0.0.5"), True) == rules.Ready("10.0.0.5")
    assert isinstance(rules.readiness(None, None), rules.Ended)
    assert isinstance(
        rules.readiness(_pod("Running", "10.0.0.5", deleting=True), True), rules.Ended
    )
    ended = rules.readiness(
        _pod("Failed", terminated={"reason": "Error", "exitCode": 1, "message": "Boom"}), None
    )
    assert ended == rules.Ended("the driver pod srv-driver ended: Failed, Error, exit code 1, Boom")
    # The watcher keeps the pod Running a moment after the Spark container ended.
    crashed = _pod("Running", "10.0.0.5", terminated={"reason": "Error", "exitCode": 1})
    assert isinstance(rules.readiness(crashed, False), rules.Ended)


def test_host_for():
    ready = rules.Ready("10.0.0.5")
    assert rules.host_for("pod_ip", ready, "svc", "ns") == "10.0.0.5"
    assert rules.host_for("service", ready, "svc", "ns") == "svc.ns.svc"


@pytest.mark.parametrize(
    ("check", "value"),
    [(rules.check_address, "node"), (rules.check_mode, "both"), (rules.check_namespace, "Bad_NS")],
)
def test_bad_choices_name_the_value(check, value):
    with pytest.raises(SparkConfError, match=value):
        check(value)
