import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import naming
from airflow_provider_sparkk8s.submission.conf import (
    DriverConf,
    LocalInputs,
    MainAppResource,
)
from airflow_provider_sparkk8s.submission.naming import SubmissionIds

IDS = SubmissionIds(
    app_id="spark-0123456789abcdef0123456789abcdef",
    prefix_unique_id="a1b2c39ad0f8a400",
    config_map_unique_id="d4e5f69ad0f8a400",
    service_unique_id="0a0b0c9ad0f8a400",
)


def conf(spark_conf, env=None):
    return DriverConf(
        spark_conf=spark_conf,
        spark_version="4.3.0",
        ids=IDS,
        main_app_resource=MainAppResource("java", None),
        main_class="Main",
        local=LocalInputs(environment=env or {}),
    )


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("My Spark_App.v2", "my-spark-app-v2-a1b2c39ad0f8a400"),
        ("org.apache.spark.examples.SparkPi", "org-apache-spark-examples-sparkpi-a1b2c39ad0f8a400"),
        ("  -- odd__name ", "odd-name-a1b2c39ad0f8a400"),
        ("7up", "xup-a1b2c39ad0f8a400"),
        ("ÄÖ app", "app-a1b2c39ad0f8a400"),
    ],
)
def test_resource_name_prefix_examples(name, prefix):
    assert naming.resource_name_prefix(name, "a1b2c39ad0f8a400") == prefix


def test_unique_id_is_six_hex_then_clock_low_40_bits():
    assert naming.unique_id(bytes([0xA1, 0xB2, 0xC3]), 0x19AD0F8A400) == "a1b2c39ad0f8a400"
    assert naming.unique_id(b"\x00\x00\x01", 0x10) == "00000110"


def test_app_name_label():
    assert naming.app_name_label("My Spark_App.v2") == "my-spark-app-v2"
    assert naming.app_name_label("-x-") == "x"
    assert naming.app_name_label("a" * 62 + ".b") == "a" * 62
    assert naming.app_name_label("%%%") == ""


def test_names_of_objects():
    c = conf({"spark.app.name": "pi"})
    assert naming.driver_pod_name(c) == "pi-a1b2c39ad0f8a400-driver"
    assert naming.driver_service_name(c) == "pi-a1b2c39ad0f8a400-driver-svc"
    assert naming.driver_conf_map_name(c) == "spark-drv-d4e5f69ad0f8a400-conf-map"
    assert naming.app_name(conf({})) == "spark"
    assert naming.driver_pod_name(conf({"spark.kubernetes.driver.pod.name": "my-pod"})) == "my-pod"


def test_service_name_falls_back_when_too_long():
    c = conf({"spark.app.name": "x" * 36})
    assert len("x" * 36 + "-a1b2c39ad0f8a400-driver-svc") > 63
    assert naming.driver_service_name(c) == "spark-0a0b0c9ad0f8a400-driver-svc"
    c = conf({"spark.app.name": "x" * 19})
    assert naming.driver_service_name(c) == "x" * 19 + "-a1b2c39ad0f8a400-driver-svc"


def test_conf_map_name_truncates_id():
    assert naming.conf_map_name("f" * 300) == ("spark-drv-" + "f" * 300)[:244] + "-conf-map"


def test_overlong_app_name_is_refused():
    with pytest.raises(SparkConfError) as err:
        naming.driver_pod_name(conf({"spark.app.name": "a" * 250}))
    assert err.value.key == "spark.app.name"


def test_bad_explicit_pod_name_is_refused():
    with pytest.raises(SparkConfError) as err:
        naming.driver_pod_name(conf({"spark.kubernetes.driver.pod.name": "My_Pod"}))
    assert err.value.key == "spark.kubernetes.driver.pod.name"


def test_prefix_override_only_when_testing():
    spark_conf = {"spark.kubernetes.driver.resourceNamePrefix": "fixed", "spark.app.name": "a"}
    assert naming.driver_resource_prefix(conf(spark_conf)) == "a-a1b2c39ad0f8a400"
    assert naming.driver_resource_prefix(conf(spark_conf, {"SPARK_TESTING": "1"})) == "fixed"


def test_java_date_string():
    assert naming.java_date_string(1764352742) == "Fri Nov 28 17:59:02 UTC 2025"


def test_new_submission_ids_uses_given_sources():
    draws = iter([b"\x01\x02\x03", b"\x04\x05\x06", b"\x07\x08\x09", b"\x00" * 8, b"\xab" * 32])
    import uuid

    fixed = uuid.UUID("12345678-1234-5678-1234-567812345678")
    ids = naming.new_submission_ids(lambda n: next(draws), lambda: 0x19AD0F8A400, lambda: fixed.int)
    assert ids.app_id == "spark-12345678123456781234567812345678"
    assert ids.prefix_unique_id == "0102039ad0f8a400"
    assert ids.config_map_unique_id == "0405069ad0f8a400"
    assert ids.service_unique_id == "0708099ad0f8a400"
    assert ids.local_dir_uuids == (str(fixed),)
    assert ids.auth_secret == "ab" * 32
    assert ids.upload_seed == fixed.int
    real = naming.new_submission_ids()
    assert len(real.app_id) == 38 and real.prefix_unique_id != real.config_map_unique_id
    assert uuid.UUID(real.local_dir_uuids[0]).version == 4


def test_our_version_4_uuids_are_the_uuid_modules():
    """Drawn without importing uuid (start-up time), but the same bits and text."""
    import random
    import uuid

    draw = random.Random(7)
    for bits in [0, 2**128 - 1, *(draw.getrandbits(128) for _ in range(1000))]:
        expected = uuid.UUID(int=bits, version=4)
        assert naming.uuid4_bits(bits) == expected.int
        assert naming.uuid_text(naming.uuid4_bits(bits)) == str(expected)
