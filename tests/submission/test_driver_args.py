"""The primary resource read back from a driver container's args."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.submission.driver_args import main_resource_of

JAR = "local:///opt/spark/examples/jars/spark-examples.jar"


@pytest.mark.parametrize(
    "args",
    [
        ["driver", "--properties-file", "/opt/spark/conf/spark.properties", "--class", "Pi", JAR],
        [
            "driver",
            "--proxy-user",
            "alice",
            "--properties-file",
            "/p",
            "--class",
            "Pi",
            JAR,
            "100",
        ],
        ["--from-template", "x", "driver", "--properties-file", "/p", "--class", "Pi", JAR],
    ],
    ids=["plain", "proxy-user-and-app-args", "after-template-args"],
)
def test_the_argument_after_spark_options_is_the_primary_resource(args: list[str]) -> None:
    assert main_resource_of(args) == JAR


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["sleep", "infinity"],
        ["driver", "--properties-file", "/p", JAR],
        ["driver", "--properties-file", "/p", "--class", "Pi"],
    ],
    ids=["empty", "not-spark", "no-class", "nothing-after-class"],
)
def test_args_without_a_whole_driver_command_give_none(args: list[str]) -> None:
    assert main_resource_of(args) is None
