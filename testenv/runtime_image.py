"""The Spark images' trees: pyspark's Spark distribution laid out as the Spark images lay it
out, with our entrypoint and example programs, named in an images file whose trees
testenv/realnode/image.py packs into the real node's images. `sparkk8s/spark:<version>` is
the tree built from pyspark <version>: 4.3.0 by default, and 3.5.9, 4.0.5, 4.1.4 and 4.2.1 for the
real-Spark tests of the older lines.

    python -m testenv.runtime_image            # sparkk8s/spark:4.3.0; prints the images file
    python -m testenv.runtime_image 3.5.9      # one file naming each version given
    python -m testenv.runtime_image --all      # every line the real-Spark tests run

The distribution is the pyspark package the parity tests install
(`tests/parity/install_spark.sh`, one venv per Spark release under ~/.cache/sparkk8s-parity,
with a lock). Each tree goes under ~/.cache/sparkk8s-runtime, keyed by the Spark version and
a digest of our files, built under a lock and renamed into place when complete:

    opt/spark/{bin,sbin,python,...}       -> the pyspark package's directories
    opt/spark/jars/*.jar                    -> the package's jars, and the S3A connector's
                                            (hadoop-aws at the release's Hadoop version and
                                            the AWS SDK modules it loads, testenv/hadoop_aws.py)
                                            the Azure connector's (hadoop-azure at that
                                            version and what it needs at run time that the
                                            package lacks, testenv/hadoop_azure.py)
                                            and the GCS connector's shaded jar (the release
                                            line for that Hadoop, testenv/gcs_connector.py)
    opt/spark/conf, opt/spark/work-dir      empty: the conf volume's mount point, the work dir
    opt/entrypoint.sh                       testenv/image/entrypoint.sh
    opt/sparkk8s/examples/*.py              testenv/image/examples/ (pi.py, fail.py, oom.py,
                                            identity.py)
    opt/sparkk8s/examples/jars/sparkk8s-examples.jar
                                            testenv/image/jvm/ (JavaPi), compiled here with
                                            the JDK's javac against that release's jars
    home/spark                              the containers' HOME (holds no kubeconfig)
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testenv import gcs_connector, hadoop_aws, hadoop_azure

REPOSITORY = "sparkk8s/spark"
SPARK_VERSION = "4.3.0"  # the default image's (the demo's and the example DAG's)
# Every Spark release a real-Spark test runs (the runtime plane's images file names them all).
RUNTIME_VERSIONS = (SPARK_VERSION, "3.5.9", "4.0.5", "4.1.4", "4.2.1")
EXAMPLES = "/opt/sparkk8s/examples"  # where pi.py and fail.py are, inside the image
# The JVM example (the quickstart's): built from testenv/image/jvm, since the distribution in the
# pyspark package has no examples jar.
EXAMPLES_JAR = f"{EXAMPLES}/jars/sparkk8s-examples.jar"
JAVA_PI_CLASS = "org.sparkk8s.examples.JavaPi"
REPO = Path(__file__).resolve().parents[1]
IMAGE_SOURCES = REPO / "testenv" / "image"
INSTALL_SPARK = REPO / "tests" / "parity" / "install_spark.sh"
# The parts of the pyspark package that make a Spark distribution (the rest is Python code,
# which the pyspark venv's interpreter imports itself).
DISTRIBUTION_DIRS = ("bin", "sbin", "jars", "python", "data", "licenses")
LINKED_DIRS = tuple(name for name in DISTRIBUTION_DIRS if name != "jars")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def image_name(version: str = SPARK_VERSION) -> str:
    return f"{REPOSITORY}:{version}"


IMAGE_NAME = image_name()


def cache_root() -> Path:
    return Path(os.environ.get("SPARKK8S_RUNTIME_CACHE", Path.home() / ".cache/sparkk8s-runtime"))


def parity_root() -> Path:
    return Path(os.environ.get("SPARKK8S_PARITY_HOME", Path.home() / ".cache/sparkk8s-parity"))


def pyspark_venv(version: str = SPARK_VERSION) -> Path:
    """The pyspark install of `version`, installed first if needed (its script locks)."""
    venv = parity_root() / f"pyspark-{version}"
    if not (venv / "bin" / "spark-submit").exists():
        subprocess.run([str(INSTALL_SPARK), version], check=True)
    return venv


def _package_dir(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages/pyspark"))
    if not found:
        raise FileNotFoundError(f"no pyspark package under {venv}")
    return found[0]


def distribution_jars(venv: Path) -> Path:
    return _package_dir(venv) / "jars"


def _java_home() -> str:
    java = shutil.which("java")
    if java is None:
        raise FileNotFoundError("no java on PATH: the Spark images need Java 17")
    return str(Path(java).resolve().parent.parent)


def _sources_digest() -> str:
    digest = hashlib.sha256()
    # The connectors' fetch scripts and release picks decide which jars an image gains: a
    # change rebuilds.
    digest.update(hadoop_aws.FETCH_SCRIPT.read_bytes())
    digest.update(gcs_connector.FETCH_SCRIPT.read_bytes())
    digest.update(hadoop_azure.FETCH_SCRIPT.read_bytes())
    digest.update(repr(sorted(gcs_connector.RELEASES.items())).encode())
    for path in sorted(IMAGE_SOURCES.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(IMAGE_SOURCES)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _build_examples_jar(tree: Path, package: Path) -> None:
    """javac and jar of the JDK the images run on, against the release's own jars."""
    jdk_bin = Path(_java_home()) / "bin"
    if not (jdk_bin / "javac").exists():
        raise FileNotFoundError(f"no javac in {jdk_bin}: the JVM example needs a JDK 17")
    sources = sorted(str(path) for path in (IMAGE_SOURCES / "jvm").rglob("*.java"))
    classes = tree / ".examples-classes"
    jar = tree / EXAMPLES_JAR.lstrip("/")
    jar.parent.mkdir(parents=True)
    subprocess.run(
        [str(jdk_bin / "javac"), "--release", "17", "-nowarn", "-cp", f"{package / 'jars'}/*",
         "-d", str(classes), *sources],
        check=True,
    )  # fmt: skip
    subprocess.run(
        [str(jdk_bin / "jar"), "--create", "--file", str(jar), "--main-class", JAVA_PI_CLASS,
         "-C", str(classes), "."],
        check=True,
    )  # fmt: skip
    shutil.rmtree(classes)


def _link_jars(jars: Path, package_jars: Path) -> None:
    """The distribution's jars, then the S3A and Azure connectors' that it (or the one before)
    lacks and the GCS connector's shaded jar, as the Dockerfile of a user's image would copy
    them into $SPARK_HOME/jars."""
    jars.mkdir()
    shipped = sorted(path.name for path in package_jars.iterdir())
    for name in shipped:
        (jars / name).symlink_to(package_jars / name)
    hadoop = hadoop_aws.hadoop_version(package_jars)
    if hadoop is None:
        return
    for connector in (hadoop_aws.fetch(hadoop), hadoop_azure.fetch(hadoop)):
        present = [path.name for path in jars.iterdir()]
        for name in hadoop_aws.jars_to_add((p.name for p in connector.glob("*.jar")), present):
            (jars / name).symlink_to(connector / name)
    release = gcs_connector.release_for(hadoop)
    if release is not None:
        for path in gcs_connector.fetch(release).glob("*.jar"):
            (jars / path.name).symlink_to(path)


def _build_tree(tree: Path, package: Path) -> None:
    spark = tree / "opt" / "spark"
    spark.mkdir(parents=True)
    for name in LINKED_DIRS:
        (spark / name).symlink_to(package / name)
    _link_jars(spark / "jars", package / "jars")
    (spark / "conf").mkdir()
    (spark / "work-dir").mkdir()
    shutil.copy2(IMAGE_SOURCES / "entrypoint.sh", tree / "opt" / "entrypoint.sh")
    examples = tree / EXAMPLES.lstrip("/")
    examples.parent.mkdir(parents=True)
    shutil.copytree(IMAGE_SOURCES / "examples", examples)
    _build_examples_jar(tree, package)
    (tree / "home" / "spark").mkdir(parents=True)


def image_config(tree: Path, venv: Path) -> dict[str, object]:
    java_home = _java_home()
    return {
        "tree": str(tree),
        "entrypoint": ["/opt/entrypoint.sh"],
        "workingDir": "/opt/spark/work-dir",
        "env": {
            "SPARK_HOME": "/opt/spark",
            "JAVA_HOME": java_home,
            # The pyspark venv's interpreter runs the driver's program and the Python workers.
            "PYSPARK_PYTHON": str(venv / "bin" / "python"),
            "PATH": f"/opt/spark/bin:{java_home}/bin:{venv / 'bin'}:{DEFAULT_PATH}",
            "HOME": "/home/spark",
            "LANG": "C.UTF-8",
        },
    }


def _tree(root: Path, key: str, venv: Path) -> Path:
    """The version's tree under `root`, built first if missing (the caller holds the lock)."""
    tree = root / key
    if not tree.is_dir():
        partial = root / f".{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        _build_tree(partial, _package_dir(venv))
        partial.rename(tree)
    return tree


def spark_image(*versions: str) -> Path:
    """The images file naming `sparkk8s/spark:<version>` for each of `versions` (default
    4.3.0), each tree built if missing."""
    versions = versions or (SPARK_VERSION,)
    venvs = {version: pyspark_venv(version) for version in versions}
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    digest = _sources_digest()
    images_file = root / f"images-{'-'.join(versions)}-{digest}.json"
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        images = {
            image_name(version): image_config(_tree(root, f"spark-{version}-{digest}", venv), venv)
            for version, venv in venvs.items()
        }
        images_file.write_text(json.dumps(images, indent=2))
    return images_file


if __name__ == "__main__":
    arguments = sys.argv[1:]
    print(spark_image(*(RUNTIME_VERSIONS if arguments == ["--all"] else arguments)))
