"""spark-submit's own argument checks (SparkSubmitArguments, prepareSubmitEnvironment).

Each refusal is also a parity scenario (tests/parity/scenarios/refuse-*.yaml), checked
against real spark-submit on every Spark line; these tests pin the edges of each rule."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.argument_checks import (
    DRIVER_MEMORY,
    EXECUTOR_CORES,
    check_arguments,
    check_cluster_mode_application,
    check_driver_java_options,
    resolve,
)
from airflow_provider_sparkk8s.submission.command_line.arguments import parse_spark_submit

MASTER = ["--master", "k8s://https://10.0.0.1:6443", "--deploy-mode", "cluster"]
JAR = ["--class", "a.B", "local:///opt/app.jar"]


def parse(*argv: str, env: dict[str, str] | None = None):
    return parse_spark_submit([*MASTER, *argv, *JAR], environ=env or {}, read_text=lambda p: None)


@pytest.mark.parametrize("value", ["1", "512m", "2g", "2G", " 4g ", "1t", "10kb"])
def test_memory_accepted(value: str) -> None:
    assert parse("--executor-memory", value).spark_conf["spark.executor.memory"] == value


@pytest.mark.parametrize("value", ["lots", "0", "0k", "-1g", "1.5g", "2x", "", "99999999999p"])
def test_memory_refused_naming_flag_and_value(value: str) -> None:
    with pytest.raises(SparkConfError) as raised:
        parse("--executor-memory", value)
    assert (raised.value.key, raised.value.value) == ("--executor-memory", value)
    assert "Executor memory must be a positive number" in str(raised.value)
    assert "a positive whole number with an optional unit" in str(raised.value)  # 1.5g: whole


@pytest.mark.parametrize(("line", "accepted"), [("3.5.9", False), ("4.1.4", False),
                                                ("4.2.1", True), ("4.3.0", True)])  # fmt: skip
def test_memory_in_iec_units_by_spark_line(line: str, accepted: bool) -> None:
    argv = ["--spark-version", line, "--driver-memory", "2gib", "--executor-memory", "512Mi"]
    if accepted:
        assert parse(*argv).spark_conf["spark.driver.memory"] == "2gib"
        return
    with pytest.raises(SparkConfError, match=r"IEC units such as 2gib need Spark 4\.2") as raised:
        parse(*argv)
    assert (raised.value.key, raised.value.value) == ("--driver-memory", "2gib")


def test_the_line_for_the_checks_comes_from_the_image_tag_or_the_callers_settings() -> None:
    image = "spark.kubernetes.container.image"
    with pytest.raises(SparkConfError):
        parse("--conf", f"{image}=apache/spark:3.5.1", "--driver-memory", "2gib")
    parse("--conf", f"{image}=apache/spark:4.2.1", "--driver-memory", "2gib")
    argv = [*MASTER, "--driver-memory", "2gib", *JAR]
    parse_spark_submit(argv, environ={}, image="apache/spark:4.3.0")  # the operator's image=
    parse_spark_submit(argv, environ={}, spark_version="4.2.0")  # the operator's spark_version=
    with pytest.raises(SparkConfError):
        parse_spark_submit(argv, environ={}, image="apache/spark:4.1.1")


@pytest.mark.parametrize("value", ["1", "+2", "64"])
def test_counts_accepted(value: str) -> None:
    parse("--driver-cores", value, "--executor-cores", value, "--num-executors", value)


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", " 2", "2147483648"])
def test_counts_refused(value: str) -> None:
    # String.toInt does not trim and overflows past Int.MaxValue.
    for flag in ("--driver-cores", "--executor-cores", "--num-executors"):
        with pytest.raises(SparkConfError) as raised:
            parse(flag, value)
        assert (raised.value.key, raised.value.value) == (flag, value)


def test_value_comes_from_flag_then_conf_then_environment() -> None:
    env = {"SPARK_DRIVER_MEMORY": "1g", "SPARK_EXECUTOR_CORES": "2"}
    conf = {"spark.driver.memory": "2g"}
    options = {"--driver-memory": "3g"}
    assert resolve(DRIVER_MEMORY, options, conf, env) == ("--driver-memory", "3g")
    assert resolve(DRIVER_MEMORY, {}, conf, env) == ("spark.driver.memory", "2g")
    assert resolve(DRIVER_MEMORY, {}, {}, env) == ("SPARK_DRIVER_MEMORY", "1g")
    assert resolve(EXECUTOR_CORES, {}, {}, env) == ("SPARK_EXECUTOR_CORES", "2")
    assert resolve(EXECUTOR_CORES, {}, {}, {}) is None
    with pytest.raises(SparkConfError) as raised:
        parse(env={"SPARK_EXECUTOR_MEMORY": "none"})
    assert raised.value.key == "SPARK_EXECUTOR_MEMORY"


def test_executor_count_is_free_under_dynamic_allocation() -> None:
    # "true" in any case, untrimmed, as Scala's equalsIgnoreCase.
    parse("--num-executors", "0", "--conf", "spark.dynamicAllocation.enabled=TRUE")
    with pytest.raises(SparkConfError):
        parse("--num-executors", "0", "--conf", "spark.dynamicAllocation.enabled= true")


def test_total_executor_cores_from_conf_is_checked() -> None:
    with pytest.raises(SparkConfError) as raised:
        parse("--conf", "spark.cores.max=0")
    assert raised.value.key == "spark.cores.max"


@pytest.mark.parametrize(
    "principal", [["--principal", "a@B"], ["--conf", "spark.kerberos.principal=a@B"]]
)
def test_proxy_user_and_principal_are_exclusive(principal: list[str]) -> None:
    with pytest.raises(SparkConfError) as raised:
        parse("--proxy-user", "bob", *principal)
    assert raised.value.key == "--proxy-user" and "a@B" in str(raised.value)
    parse("--proxy-user", "bob")
    parse(*principal)


def test_remote_with_a_master_is_refused_unless_local_connect() -> None:
    with pytest.raises(SparkConfError) as raised:
        parse("--conf", "spark.remote=sc://h")
    assert (raised.value.key, raised.value.value) == ("spark.remote", "sc://h")
    with pytest.raises(SparkConfError) as raised:
        parse(env={"SPARK_REMOTE": "sc://h"})
    assert raised.value.key == "SPARK_REMOTE"
    parse("--conf", "spark.remote=sc://h", "--conf", "spark.local.connect=1")


def test_kill_and_status_together_are_refused() -> None:
    with pytest.raises(SparkConfError) as raised:
        check_arguments({"--kill": "ns:a", "--status": "ns:b"}, {}, {}, spark_version="4.3.0")
    assert "ns:a" in str(raised.value) and raised.value.value == "ns:b"
    not_a_submit = {"--kill": "ns:a", "--executor-memory": "lots"}
    check_arguments(not_a_submit, {}, {}, spark_version="4.3.0")


@pytest.mark.parametrize(
    ("primary", "main_class"),
    [
        ("spark-shell", None),
        ("pyspark-shell", None),
        ("sparkr-shell", None),
        ("spark-internal", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"),
        ("spark-internal", "org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver"),
        ("spark-internal", "org.apache.spark.sql.connect.service.SparkConnectServer"),
    ],
)
def test_shells_and_servers_cannot_be_cluster_drivers(primary: str, main_class: str | None):
    with pytest.raises(SparkConfError):
        check_cluster_mode_application(primary, main_class)


def test_an_application_is_fine() -> None:
    check_cluster_mode_application("local:///opt/app.jar", "com.example.Main")
    check_cluster_mode_application("s3a://b/job.py", "org.apache.spark.deploy.PythonRunner")


@pytest.mark.parametrize(
    ("options", "conf", "origin"),
    [
        ({"--driver-java-options": "-Dx=1 -Xmx2g"}, {}, "--driver-java-options"),
        ({}, {"spark.driver.extraJavaOptions": "'-Xmx2g'"}, "spark.driver.extraJavaOptions"),
        ({}, {"spark.driver.defaultJavaOptions": "-Xmx1g"}, "spark.driver.defaultJavaOptions"),
    ],
)
@pytest.mark.parametrize("version", ["3.5.9", "4.1.4", "4.3.0"])
def test_a_driver_heap_in_java_options_is_refused_as_the_launcher_refuses_it(
    options: dict[str, str], conf: dict[str, str], origin: str, version: str
) -> None:
    with pytest.raises(SparkConfError) as refused:
        check_driver_java_options(options, conf, spark_version=version)
    assert refused.value.key == origin
    assert "Not allowed to specify max heap(Xmx)" in str(refused.value)


def test_4x_splits_driver_java_options_and_looks_for_an_option_starting_with_xmx() -> None:
    options = {"--driver-java-options": "-Xms1g -XX:MaxRAMPercentage=80 '-Dx=-Xmx'"}
    check_driver_java_options(options, {}, spark_version="4.3.0")
    with pytest.raises(SparkConfError) as refused:
        check_driver_java_options(
            {}, {"spark.driver.defaultJavaOptions": '"-Dx'}, spark_version="4.1.4"
        )
    assert refused.value.key == "spark.driver.defaultJavaOptions"
    assert "Invalid option string" in str(refused.value)


def test_3_5_refuses_any_xmx_in_the_text_and_splits_nothing() -> None:
    options = {"--driver-java-options": "-Dnote=noXmx"}
    with pytest.raises(SparkConfError, match="Not allowed to specify max heap"):
        check_driver_java_options(options, {}, spark_version="3.5.9")
    unsplit = {"spark.driver.defaultJavaOptions": '"-Dx'}
    check_driver_java_options({}, unsplit, spark_version="3.5.9")
