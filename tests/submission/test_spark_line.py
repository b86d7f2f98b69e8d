"""The Spark line from an image's tag: the official images' naming, and what says nothing."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.spark_line import (
    DEFAULT_SPARK_VERSION,
    choose_spark_line,
    driver_image,
    version_from_image,
)

TAGS = [
    ("apache/spark:3.5.1", "3.5.1"),
    ("apache/spark:3.5.1-scala2.12-java17-python3-ubuntu", "3.5.1"),
    ("apache/spark:4.0.1-java21-r", "4.0.1"),
    ("spark:4.0.1-scala2.13-java17-python3-ubuntu", "4.0.1"),
    ("spark:3.5.6-java17", "3.5.6"),
    ("library/spark:4.1.0", "4.1.0"),
    ("docker.io/library/spark:4.2.1-python3", "4.2.1"),
    ("docker.io/apache/spark:4.3.0", "4.3.0"),
    ("apache/spark-py:v3.4.0", "3.4.0"),
    ("apache/spark-r:v3.3.2", "3.3.2"),
    ("apache/spark:v3.5.0", "3.5.0"),
    ("ghcr.io/apache/spark-docker/spark:3.5.0-scala2.12-java11-python3-ubuntu", "3.5.0"),
    ("registry.local:5000/mirror/apache/spark:4.0.0", "4.0.0"),
    ("apache/spark:4.0.0-preview2-scala2.13-java17-python3-ubuntu", "4.0.0"),
    ("apache/spark:3.5.1@sha256:" + "a" * 64, "3.5.1"),
    # Says nothing:
    ("apache/spark", None),
    ("apache/spark:latest", None),
    ("apache/spark:python3", None),
    ("apache/spark:python3-java17", None),
    ("apache/spark@sha256:" + "b" * 64, None),
    ("registry.local:5000/spark", None),
    ("apache/spark:{{SPARK_VERSION}}", None),
    ("mycorp/spark-etl:3.5.1", None),  # not an official repository name
    ("mycorp/etl:4.0.0", None),
    ("apache/spark:3.5", None),
    ("apache/spark:3.5.1x", None),
]


@pytest.mark.parametrize(("image", "version"), TAGS)
def test_version_from_image(image: str, version: str | None) -> None:
    assert version_from_image(image) == version


def test_the_tag_gives_the_line() -> None:
    line = choose_spark_line(None, "apache/spark:3.5.1", how_to_set="spark_version")
    assert (line.version, line.source, line.warning) == ("3.5.1", "image", None)
    assert line.describe() == "Spark 3.5.1 (from the image tag of apache/spark:3.5.1)"


def test_a_tag_that_says_nothing_warns_with_the_line_and_how_to_set_it() -> None:
    line = choose_spark_line(None, "mycorp/spark-etl:1.2", how_to_set="spark_version=")
    assert (line.version, line.source) == (DEFAULT_SPARK_VERSION, "default")
    assert line.warning is not None
    assert DEFAULT_SPARK_VERSION in line.warning and "spark_version=" in line.warning
    assert "mycorp/spark-etl:1.2" in line.warning


def test_no_image_gets_no_tag_warning_its_refusal_says_it_all() -> None:
    for image in (None, ""):
        line = choose_spark_line(None, image, how_to_set="--spark-version")
        assert (line.version, line.source, line.warning) == (DEFAULT_SPARK_VERSION, "default", None)


def test_a_given_version_wins_and_a_different_tag_line_warns() -> None:
    same = choose_spark_line("3.5.9", "apache/spark:3.5.1", how_to_set="spark_version")
    assert (same.version, same.source, same.warning) == ("3.5.9", "set", None)
    other = choose_spark_line("4.3.0", "apache/spark:3.5.1", how_to_set="spark_version")
    assert other.version == "4.3.0" and "3.5.1" in (other.warning or "")


def test_an_image_of_an_unsupported_line_is_refused() -> None:
    with pytest.raises(SparkConfError) as raised:
        choose_spark_line(None, "apache/spark-py:v3.4.0", how_to_set="spark_version")
    assert raised.value.value == "apache/spark-py:v3.4.0" and "3.4.0" in str(raised.value)


def test_the_driver_image_follows_sparks_fallback() -> None:
    conf = {
        "spark.kubernetes.container.image": "a:1",
        "spark.kubernetes.driver.container.image": "d:2",
    }
    assert driver_image(conf) == "d:2"
    assert driver_image({"spark.kubernetes.container.image": "a:1"}) == "a:1"
    assert driver_image(conf, "op:3") == "op:3"
    assert driver_image({}) is None
