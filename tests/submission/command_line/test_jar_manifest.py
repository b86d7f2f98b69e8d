"""A jar's Main-Class when --class is missing (the parity scenarios main-class-from-manifest
and refuse-jar-* hold real spark-submit's answers; these pin the manifest and jar rules)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.arguments import parse_spark_submit
from airflow_provider_sparkk8s.submission.command_line.jar_manifest import (
    JarFile,
    main_attributes,
    main_class_from_jar,
    read_jar,
)

MASTER = ["--master", "k8s://https://10.0.0.1:6443", "--deploy-mode", "cluster"]


def jar(path: Path, *entries: tuple[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in entries:
            archive.writestr(name, content)
    return path


def test_the_main_section_as_java_reads_it():
    text = (
        b"Manifest-Version: 1.0\nmain-class: com.example.Very\n LongName\r\n\r\nMain-Class: x.Y\n"
    )
    assert main_attributes(text) == {
        "manifest-version": "1.0",
        "main-class": "com.example.VeryLongName",
    }
    assert main_attributes(b"Main-Class: a.B\rX: y") == {"main-class": "a.B", "x": "y"}
    with pytest.raises(ValueError, match="invalid manifest header"):
        main_attributes(b"Main-Class:a.B\n")


def test_only_a_manifest_where_jar_input_stream_looks_counts(tmp_path):
    manifest = ("META-INF/MANIFEST.MF", "Main-Class: a.B\n")
    first = jar(tmp_path / "first.jar", manifest, ("a/B.class", "x"))
    after_dir = jar(tmp_path / "dir.jar", ("META-INF/", ""), manifest)
    later = jar(tmp_path / "later.jar", ("a/B.class", "x"), manifest)
    assert read_jar(str(first)).manifest == b"Main-Class: a.B\n"
    assert read_jar(str(after_dir)).manifest == b"Main-Class: a.B\n"
    assert read_jar(str(later)) == JarFile(exists=True)
    (tmp_path / "text.jar").write_text("not a zip")
    assert read_jar(str(tmp_path / "text.jar")) == JarFile(exists=True)
    assert read_jar(str(tmp_path / "missing.jar")) == JarFile(exists=False)


def test_the_class_comes_from_a_local_jar_and_the_name_from_its_file(tmp_path):
    app = jar(tmp_path / "app.jar", ("META-INF/MANIFEST.MF", "Main-Class: com.example.Main\n"))
    parsed = parse_spark_submit([*MASTER, str(app)], environ={}, read_jar=read_jar)
    assert parsed.main_class == "com.example.Main"
    assert parsed.spark_conf["spark.app.name"] == "app.jar"
    assert main_class_from_jar(f"file://{app}", read_jar) == "com.example.Main"


@pytest.mark.parametrize(
    ("primary", "why"),
    [
        ("local:///opt/app.jar", "cannot read a local: jar's manifest either"),
        ("https://example.com/app.jar", "give the class of a https: jar"),
        ("s3a://bucket/app.jar", "give the class of a s3a: jar"),
    ],
)
def test_a_jar_that_is_not_local_needs_its_class(primary, why):
    with pytest.raises(SparkConfError, match=why) as raised:
        main_class_from_jar(primary, read_jar)
    assert raised.value.key == "--class" and primary in str(raised.value)
