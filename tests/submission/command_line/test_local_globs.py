"""spark-submit's glob resolution of local dependency entries."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.local_globs import (
    list_local_files,
    no_listing,
    resolve_local_globs,
)


def test_remote_entries_and_unknown_paths_stay():
    value = "local:///a.jar,https://x/b.jar,file:/missing.jar"
    assert resolve_local_globs("spark.jars", value, no_listing) == value


def test_directory_drops_out_with_a_warning(tmp_path, caplog):
    (tmp_path / "dir").mkdir()
    (tmp_path / "f.txt").write_text("f")
    value = f"file:{tmp_path}/dir,file:{tmp_path}/f.txt"
    with caplog.at_level(logging.WARNING):
        resolved = resolve_local_globs("spark.files", value, list_local_files)
    assert resolved == f"file:{tmp_path}/f.txt"
    assert "spark.files" in caplog.text and f"{tmp_path}/dir" in caplog.text


def test_pattern_becomes_the_sorted_files_it_matches(tmp_path):
    for name in ("b.jar", "a.jar", "c.txt"):
        (tmp_path / name).write_text(name)
    (tmp_path / "d.jar").mkdir()
    resolved = resolve_local_globs(
        "spark.jars", f"{tmp_path}/*.jar,local:///x.jar", list_local_files
    )
    assert resolved == f"file:{tmp_path}/a.jar,file:{tmp_path}/b.jar,local:///x.jar"


def test_fragment_on_a_pattern_must_match_one_file(tmp_path):
    (tmp_path / "a.zip").write_text("a")
    (tmp_path / "b.zip").write_text("b")
    assert resolve_local_globs("spark.archives", f"{tmp_path}/a*.zip#env", list_local_files) == (
        f"file:{tmp_path}/a.zip#env"
    )
    with pytest.raises(SparkConfError) as err:
        resolve_local_globs("spark.archives", f"{tmp_path}/*.zip#env", list_local_files)
    assert err.value.key == "spark.archives" and "matches 2 files" in str(err.value)


def test_listing(tmp_path):
    (tmp_path / "f").write_text("f")
    assert list_local_files(str(tmp_path / "f")) == [str(tmp_path / "f")]
    assert list_local_files(str(tmp_path)) == []
    assert list_local_files(str(tmp_path / "nope")) is None
    assert list_local_files(str(tmp_path / "n*")) == []
