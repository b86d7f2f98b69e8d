import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import driver_service
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, PREFIX, make_conf


def service(conf):
    return driver_service.step(conf, SparkPod.initial())


def test_headless_service_4_3():
    result = service(make_conf({"spark.kubernetes.namespace": "jobs"}))
    assert result.pod == SparkPod.initial()
    svc = result.resources[0]
    assert svc["metadata"] == {
        "name": f"{PREFIX}-driver-svc",
        "labels": {"spark-app-selector": APP_ID},
    }
    spec = svc["spec"]
    assert spec["clusterIP"] == "None"
    assert spec["publishNotReadyAddresses"] is False
    assert spec["ipFamilyPolicy"] == "SingleStack" and spec["ipFamilies"] == ["IPv4"]
    assert spec["selector"] == {
        "spark-version": "4.3.0",
        "spark-app-selector": APP_ID,
        "spark-app-name": "pi",
        "spark-role": "driver",
    }
    assert spec["ports"] == [
        {"name": "driver-rpc-port", "port": 7078, "targetPort": 7078},
        {"name": "blockmanager", "port": 7079, "targetPort": 7079},
        {"name": "spark-ui", "port": 4040, "targetPort": 4040},
        {"name": "spark-connect", "port": 15002, "targetPort": 15002, "appProtocol": "grpc"},
    ]
    assert result.system_properties == {
        "spark.driver.host": f"{PREFIX}-driver-svc.jobs.svc",
        "spark.driver.port": "7078",
        "spark.driver.blockManager.port": "7079",
    }


@pytest.mark.parametrize(
    ("version", "ports", "grpc", "publish"),
    [
        ("3.5.9", 3, False, False),
        ("4.0.5", 3, False, False),
        ("4.1.4", 4, False, False),
        ("4.2.1", 4, True, False),
        ("4.3.0", 4, True, True),
    ],
)
def test_versions(version, ports, grpc, publish):
    spec = service(make_conf(version=version)).resources[0]["spec"]
    assert len(spec["ports"]) == ports
    assert ("appProtocol" in spec["ports"][-1]) is grpc
    assert ("publishNotReadyAddresses" in spec) is publish


def test_service_block_manager_port_ignores_generic_key():
    props = service(
        make_conf({"spark.blockManager.port": "7100", "spark.driver.port": "7000"})
    ).system_properties
    assert props["spark.driver.blockManager.port"] == "7079"
    assert props["spark.driver.port"] == "7000"


def test_labels_annotations_ip_families():
    extra = {
        "spark.kubernetes.driver.service.label.spark-app-selector": "mine",
        "spark.kubernetes.driver.service.label.team": "a",
        "spark.kubernetes.driver.service.annotation.note": "{{APP_ID}}",
        "spark.kubernetes.driver.service.ipFamilyPolicy": "PreferDualStack",
        "spark.kubernetes.driver.service.ipFamilies": "IPv6,IPv4",
        "spark.kubernetes.driver.service.publishNotReadyAddresses": "true",
    }
    svc = service(make_conf(extra)).resources[0]
    assert svc["metadata"]["labels"] == {"spark-app-selector": "mine", "team": "a"}
    assert svc["metadata"]["annotations"] == {"note": "{{APP_ID}}"}  # no substitution here
    assert svc["spec"]["ipFamilies"] == ["IPv6", "IPv4"]
    assert svc["spec"]["ipFamilyPolicy"] == "PreferDualStack"
    assert svc["spec"]["publishNotReadyAddresses"] is True


def test_long_prefix_falls_back_to_spark_unique_id():
    svc = service(make_conf({"spark.app.name": "a" * 40})).resources[0]
    assert svc["metadata"]["name"] == "spark-0a0b0c9ad0f8a400-driver-svc"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.driver.host", "x"),
        ("spark.driver.bindAddress", "0.0.0.0"),
        ("spark.kubernetes.driver.service.ipFamilies", "IPv4, IPv6"),
        ("spark.kubernetes.driver.service.ipFamilyPolicy", "DualStack"),
        ("spark.kubernetes.driver.service.publishNotReadyAddresses", "yes"),
    ],
)
def test_bad_input(key, value):
    with pytest.raises(SparkConfError) as err:
        service(make_conf({key: value}))
    assert err.value.key == key
