"""Lookups into the files the shell read from the submitting machine: a missing file is a
SparkConfError naming the key, text is read as each Spark line reads it, and ConfigMap data
the API server would refuse is refused first."""

from __future__ import annotations

import re

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.local_files import (
    CONFIG_MAP_MAX_BYTES,
    check_config_map_data,
    directory_files,
    file_bytes,
    file_text,
    is_config_map_key,
)
from tests.support.driver_conf import make_conf

KEY = "spark.kubernetes.kerberos.krb5.path"
LOCAL = LocalInputs(
    files={"/etc/krb5.conf": b"[libdefaults]", "/conf/core-site.xml": b"<c/>", "/conf/a": b"a"},
    directories={"/conf": ("core-site.xml", "a"), "/broken": ("gone",)},
)


def test_file_bytes_reads_a_file_the_shell_read() -> None:
    assert file_bytes(make_conf(local=LOCAL), KEY, "/etc/krb5.conf") == b"[libdefaults]"


def test_a_file_the_shell_could_not_read_names_the_key_and_the_path() -> None:
    with pytest.raises(SparkConfError) as raised:
        file_bytes(make_conf(local=LOCAL), KEY, "/etc/missing.conf")
    assert (raised.value.key, raised.value.value) == (KEY, "/etc/missing.conf")
    assert raised.value.accepted == "the path of a readable local file"


def test_directory_files_in_listing_order_and_none_for_an_unlisted_directory() -> None:
    conf = make_conf(local=LOCAL)
    assert directory_files(conf, KEY, "/conf") == [("core-site.xml", b"<c/>"), ("a", b"a")]
    assert directory_files(conf, KEY, "/not-a-directory") == []


def test_a_listed_file_that_could_not_be_read_is_an_error() -> None:
    with pytest.raises(SparkConfError) as raised:
        directory_files(make_conf(local=LOCAL), KEY, "/broken")
    assert raised.value.value == "/broken/gone"


def test_malformed_utf8_is_replaced_before_4_3_and_refused_from_4_3() -> None:
    malformed = b"a\xffb"
    assert file_text(make_conf(version="3.5.6"), KEY, "/f", malformed) == "a\ufffdb"
    assert file_text(make_conf(version="4.3.0"), KEY, "/f", b"ok") == "ok"
    with pytest.raises(SparkConfError, match="it is not valid UTF-8"):
        file_text(make_conf(version="4.3.0"), KEY, "/f", malformed)


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        ("core-site.xml", True),
        ("a_b-c.1", True),
        ("", False),
        ("with space", False),
        ("x" * 254, False),
        ("a/b", False),
    ],
)
def test_config_map_key_alphabet(name: str, accepted: bool) -> None:
    assert is_config_map_key(name) is accepted


def test_config_map_data_refuses_bad_names_and_more_than_one_mib() -> None:
    check_config_map_data(KEY, "/conf", {"core-site.xml": "<c/>"})
    with pytest.raises(SparkConfError, match=re.escape("'..' cannot be a ConfigMap key")):
        check_config_map_data(KEY, "/conf", {"..": "x"})
    with pytest.raises(SparkConfError, match="files of at most 1 MiB in total") as raised:
        check_config_map_data(KEY, "/conf", {"big": b"x" * CONFIG_MAP_MAX_BYTES})
    assert raised.value.key == KEY
