"""The Spark images builder (testenv/runtime_image.py): one images file naming
`sparkk8s/spark:<version>` for each version asked, each the tree of that pyspark release
with the S3A and GCS connectors of its Hadoop version in its jars. Stand-in pyspark installs
(the layout install_spark.sh leaves) and stand-in connector folders keep it fast and offline
(the real jars are read by tests/runtime/test_s3a_uploads_real_spark.py and
test_gcs_uploads_real_spark.py). The real node's images are laid out from these trees
(testenv/realnode/image.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testenv import gcs_connector, hadoop_aws, hadoop_azure, runtime_image


def fake_pyspark(parity: Path, version: str) -> Path:
    venv = parity / f"pyspark-{version}"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    package = venv / "lib" / "python3.11" / "site-packages" / "pyspark"
    for name in runtime_image.DISTRIBUTION_DIRS:
        (package / name).mkdir(parents=True)
    (package / "jars" / f"spark-core-{version}.jar").write_text(version)
    (package / "jars" / f"hadoop-client-api-{HADOOP[version]}.jar").write_text(version)
    (package / "jars" / "httpclient-4.5.14.jar").write_text(version)
    return package


HADOOP = {"4.3.0": "3.5.0", "3.5.9": "3.3.4"}


def fake_connector(root: Path, hadoop: str) -> Path:
    folder = root / f"hadoop-aws-{hadoop}"
    folder.mkdir(parents=True)
    for name in (f"hadoop-aws-{hadoop}.jar", "s3-2.35.4.jar", "httpclient-4.5.13.jar"):
        (folder / name).write_text(hadoop)
    return folder


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPARKK8S_PARITY_HOME", str(tmp_path / "parity"))
    monkeypatch.setenv("SPARKK8S_RUNTIME_CACHE", str(tmp_path / "runtime"))
    # The stand-in jars cannot compile the JVM example: record the call instead (the real
    # javac build runs in tests/realnode/test_real_spark_cli.py).
    monkeypatch.setattr(
        runtime_image,
        "_build_examples_jar",
        lambda tree, package: JAVAC_CALLS.append(package.name + ":" + str(package)),
    )
    JAVAC_CALLS.clear()
    FETCHED.clear()

    def fetch(hadoop: str) -> Path:
        FETCHED.append(hadoop)
        return fake_connector(tmp_path / "connectors", hadoop)

    def fetch_gcs(release: str) -> Path:
        FETCHED_GCS.append(release)
        folder = tmp_path / "connectors" / f"gcs-connector-{release}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"gcs-connector-{release}-shaded.jar").write_text(release)
        return folder

    def fetch_azure(hadoop: str) -> Path:
        FETCHED_AZURE.append(hadoop)
        folder = tmp_path / "connectors" / f"hadoop-azure-{hadoop}"
        folder.mkdir(parents=True)
        # httpclient: the distribution's; s3: the S3A connector's, already laid.
        for name in (f"hadoop-azure-{hadoop}.jar", "azure-storage-7.0.1.jar",
                     "httpclient-4.5.13.jar", "s3-2.35.4.jar"):  # fmt: skip
            (folder / name).write_text("azure " + hadoop)
        return folder

    monkeypatch.setattr(hadoop_aws, "fetch", fetch)
    monkeypatch.setattr(hadoop_azure, "fetch", fetch_azure)
    FETCHED_AZURE.clear()
    monkeypatch.setattr(gcs_connector, "fetch", fetch_gcs)
    FETCHED_GCS.clear()
    return tmp_path / "parity"


JAVAC_CALLS: list[str] = []
FETCHED: list[str] = []
FETCHED_GCS: list[str] = []
FETCHED_AZURE: list[str] = []
GCS_JAR = {
    "4.3.0": "gcs-connector-4.0.4-shaded.jar",
    "3.5.9": "gcs-connector-hadoop3-2.2.22-shaded.jar",
}


def test_each_version_names_its_own_distribution(caches: Path):
    packages = {version: fake_pyspark(caches, version) for version in ("4.3.0", "3.5.9")}
    images = json.loads(runtime_image.spark_image("4.3.0", "3.5.9").read_text())
    for version, package in packages.items():
        image = images[f"sparkk8s/spark:{version}"]
        assert image["tree"] is not None
        spark = Path(image["tree"]) / "opt" / "spark"
        jars = sorted(path.name for path in (spark / "jars").iterdir())
        hadoop = HADOOP[version]
        # The distribution's jars, and the S3A connector's of its own Hadoop release, less
        # the one the distribution already ships (its own httpclient stays the only one),
        # the Azure connector's less those two have, and the GCS connector's shaded jar of
        # the release line for that Hadoop.
        assert jars == sorted(
            [f"spark-core-{version}.jar", f"hadoop-client-api-{hadoop}.jar",
             "httpclient-4.5.14.jar", f"hadoop-aws-{hadoop}.jar", "s3-2.35.4.jar",
             f"hadoop-azure-{hadoop}.jar", "azure-storage-7.0.1.jar", GCS_JAR[version]]
        )  # fmt: skip
        assert (spark / "jars" / "s3-2.35.4.jar").read_text() == hadoop
        core = f"spark-core-{version}.jar"
        assert (spark / "jars" / core).resolve() == (package / "jars" / core).resolve()
        assert (spark / "jars" / "httpclient-4.5.14.jar").read_text() == version
        assert (spark / "jars" / f"hadoop-aws-{hadoop}.jar").read_text() == hadoop
        assert (Path(image["tree"]) / "opt" / "entrypoint.sh").is_file()
        assert image["env"]["PYSPARK_PYTHON"] == str(
            caches / f"pyspark-{version}" / "bin" / "python"
        )
    assert images["sparkk8s/spark:4.3.0"]["tree"] != images["sparkk8s/spark:3.5.9"]["tree"]
    # Each image's examples jar is built against its own release's jars.
    assert sorted(JAVAC_CALLS) == sorted(f"pyspark:{package}" for package in packages.values())
    assert sorted(FETCHED) == ["3.3.4", "3.5.0"]
    assert sorted(FETCHED_GCS) == ["4.0.4", "hadoop3-2.2.22"]
    assert sorted(FETCHED_AZURE) == ["3.3.4", "3.5.0"]


def test_the_default_is_4_3_0_alone(caches: Path):
    fake_pyspark(caches, "4.3.0")
    names = set(json.loads(runtime_image.spark_image().read_text()))
    assert names == {"sparkk8s/spark:4.3.0"} == {runtime_image.IMAGE_NAME}
    assert runtime_image.RUNTIME_VERSIONS[0] == runtime_image.SPARK_VERSION


def test_a_distribution_without_a_hadoop_client_gains_no_connector(caches: Path):
    package = fake_pyspark(caches, "4.3.0")
    (package / "jars" / "hadoop-client-api-3.5.0.jar").unlink()
    image = json.loads(runtime_image.spark_image().read_text())["sparkk8s/spark:4.3.0"]
    assert image["tree"] is not None
    jars = sorted(path.name for path in (Path(image["tree"]) / "opt/spark/jars").iterdir())
    assert jars == ["httpclient-4.5.14.jar", "spark-core-4.3.0.jar"]
    assert FETCHED == [] and FETCHED_GCS == [] and FETCHED_AZURE == []


def test_the_gcs_connectors_emulator_conf_follows_the_hadoop_line():
    """What a driver needs to read gs:// from an emulator with no credentials: 2.x's switches
    on Hadoop 3.3, auth.type after; on Hadoop 3.5 the connector in place of the file system
    core-default.xml names, and the block size in bytes (it reads no units)."""
    endpoint = "http://127.0.0.1:4443"
    spark35, spark40, spark43 = (
        gcs_connector.hadoop_conf(hadoop, endpoint) for hadoop in ("3.3.4", "3.4.1", "3.5.0")
    )
    gs = "spark.hadoop.fs.gs."
    for conf in (spark35, spark40, spark43):
        assert conf[gs + "storage.root.url"] == endpoint + "/"
    assert spark35[gs + "auth.null.enable"] == "true"
    assert spark35[gs + "auth.service.account.enable"] == "false"
    assert gs + "auth.type" not in spark35
    assert spark40 == {gs + "storage.root.url": endpoint + "/", gs + "auth.type": "UNAUTHENTICATED"}
    assert spark43[gs + "impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
    assert int(spark43[gs + "block.size"]) == 64 * 1024 * 1024
    assert gcs_connector.release_for("3.2.4") is None


def test_connector_jars_the_distribution_ships_are_left_out():
    distribution = ["netty-all-4.2.13.Final.jar", "jcl-over-slf4j-2.0.17.jar",
                    "jackson-core-2.21.2.jar", "hadoop-client-api-3.5.0.jar"]  # fmt: skip
    connector = ["hadoop-aws-3.5.0.jar", "netty-all-4.1.126.Final.jar", "commons-logging-1.2.jar",
                 "jackson-core-2.12.6.jar", "s3-transfer-manager-2.24.5.jar"]  # fmt: skip
    assert hadoop_aws.jars_to_add(connector, distribution) == [
        "hadoop-aws-3.5.0.jar",
        "s3-transfer-manager-2.24.5.jar",
    ]
    assert hadoop_aws.artifact_name("netty-transport-classes-epoll-4.1.126.Final.jar") == (
        "netty-transport-classes-epoll"
    )
    assert hadoop_aws.artifact_name("aws-java-sdk-s3-1.12.262.jar") == "aws-java-sdk-s3"


def test_the_hadoop_version_is_read_from_the_client_jar(tmp_path: Path):
    (tmp_path / "hadoop-client-runtime-3.4.2.jar").write_text("")
    assert hadoop_aws.hadoop_version(tmp_path) is None
    (tmp_path / "hadoop-client-api-3.4.2.jar").write_text("")
    assert hadoop_aws.hadoop_version(tmp_path) == "3.4.2"


def test_abfs_reads_the_blob_endpoint_from_hadoop_3_4_2():
    """Azurite serves the Blob API only: ABFS's Blob client came with Hadoop 3.4.2."""
    assert [hadoop_azure.reads_blob_endpoint(h) for h in ("3.3.4", "3.4.1", "3.4.2", "3.5.0")] == [
        False, False, True, True,
    ]  # fmt: skip
    conf = hadoop_azure.abfs_emulator_conf("127.0.0.1:10000")
    assert conf["spark.hadoop.fs.azure.abfs.endpoint"] == "127.0.0.1:10000"
    assert conf["spark.hadoop.fs.azure.fns.account.service.type"] == "BLOB"
    assert conf["spark.hadoop.fs.azure.always.use.https"] == "false"
