"""The Spark images builder (testenv/runtime_image.py): one images file naming
`sparkk8s/spark:<version>` for each version asked, each the tree of that pyspark release.
Stand-in pyspark installs (the layout install_spark.sh leaves) keep it fast and offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testenv import runtime_image
from testenv.nodeagent.images import load_images


def fake_pyspark(parity: Path, version: str) -> Path:
    venv = parity / f"pyspark-{version}"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    package = venv / "lib" / "python3.11" / "site-packages" / "pyspark"
    for name in runtime_image.DISTRIBUTION_DIRS:
        (package / name).mkdir(parents=True)
    (package / "jars" / f"spark-core-{version}.jar").write_text(version)
    return package


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKK8S_PARITY_HOME", str(tmp_path / "parity"))
    monkeypatch.setenv("SPARKK8S_RUNTIME_CACHE", str(tmp_path / "runtime"))
    # The stand-in jars cannot compile the JVM example: record the call instead (the real
    # javac build runs in tests/runtime/test_jvm_example.py).
    monkeypatch.setattr(
        runtime_image,
        "_build_examples_jar",
        lambda tree, package: JAVAC_CALLS.append(package.name + ":" + str(package)),
    )
    JAVAC_CALLS.clear()
    return tmp_path / "parity"


JAVAC_CALLS: list[str] = []


def test_each_version_names_its_own_distribution(caches: Path):
    packages = {version: fake_pyspark(caches, version) for version in ("4.3.0", "3.5.9")}
    images = load_images(runtime_image.spark_image("4.3.0", "3.5.9"))
    for version, package in packages.items():
        image = images[f"sparkk8s/spark:{version}"]
        assert image.tree is not None
        spark = Path(image.tree) / "opt" / "spark"
        assert (spark / "jars").resolve() == (package / "jars").resolve()
        assert (spark / "jars" / f"spark-core-{version}.jar").read_text() == version
        assert (Path(image.tree) / "opt" / "entrypoint.sh").is_file()
        assert image.env["PYSPARK_PYTHON"] == str(caches / f"pyspark-{version}" / "bin" / "python")
    assert images["sparkk8s/spark:4.3.0"].tree != images["sparkk8s/spark:3.5.9"].tree
    # Each image's examples jar is built against its own release's jars.
    assert sorted(JAVAC_CALLS) == sorted(f"pyspark:{package}" for package in packages.values())


def test_the_default_is_4_3_0_alone(caches: Path):
    fake_pyspark(caches, "4.3.0")
    names = set(json.loads(runtime_image.spark_image().read_text()))
    assert names == {"sparkk8s/spark:4.3.0"} == {runtime_image.IMAGE_NAME}
    assert runtime_image.RUNTIME_VERSIONS[0] == runtime_image.SPARK_VERSION
