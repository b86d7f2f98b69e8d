"""The JDK behaviours Spark's names depend on: String.split, String.trim, File.getName."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.submission.java_text import java_file_name, java_split, java_trim


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/opt/app/main.py", "main.py"),
        ("file:/tmp/job.jar", "job.jar"),
        ("local:///opt/spark/examples/jars/spark-examples.jar", "spark-examples.jar"),
        ("s3a://bucket/dir//app.R", "app.R"),
        ("dir/", "dir"),  # File drops a trailing '/'
        ("app.py", "app.py"),
        ("", ""),  # new File("").getName() is ""
        ("/", ""),
        ("///", ""),
    ],
)
def test_file_name_is_javas_file_get_name(path, name):
    assert java_file_name(path) == name


def test_trim_drops_every_control_char_and_space_but_nothing_above():
    assert java_trim("\x00\t value \x1f\x20") == "value"
    assert java_trim("\u00a0value\u2003") == "\u00a0value\u2003"  # not Java whitespace to trim
    assert java_trim("") == ""


def test_split_drops_trailing_empties_only():
    assert java_split("a,,b,,", ",") == ["a", "", "b"]
    assert java_split("", ",") == [""]
    assert java_split(",,", ",") == []
