"""spark-submit's checks on --packages, --exclude-packages and the Ivy settings file."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.packages import check_packages


def test_good_coordinates_and_exclusions_pass():
    conf = {"spark.jars.packages": "g:a:1, g/b:2 ,", "spark.jars.excludes": "g:x,g/y"}
    check_packages(conf, None)


@pytest.mark.parametrize(
    ("conf", "key", "value"),
    [
        ({"spark.jars.packages": "g:a:1,g:b"}, "spark.jars.packages", "g:b"),
        ({"spark.jars.packages": "g::1"}, "spark.jars.packages", "g::1"),
        ({"spark.jars.excludes": "g:x:1"}, "spark.jars.excludes", "g:x:1"),
    ],
)
def test_bad_forms_name_key_and_value(conf, key, value):
    with pytest.raises(SparkConfError) as err:
        check_packages(conf, None)
    assert (err.value.key, err.value.value) == (key, value)


def test_missing_ivy_settings_is_refused_even_without_packages():
    with pytest.raises(SparkConfError) as err:
        check_packages({"spark.jars.ivySettings": "/etc/ivy.xml"}, False)
    assert err.value.key == "spark.jars.ivySettings" and err.value.value == "/etc/ivy.xml"
    check_packages({"spark.jars.ivySettings": "/etc/ivy.xml"}, True)
