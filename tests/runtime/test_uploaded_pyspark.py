"""Real Spark runs an uploaded PySpark file: sparkk8s-submit uploads the main `.py` and its
`--py-files` to a `file://` path shared with the node, and the driver (pyspark 4.3.0's
spark-submit in client mode, in a pod of the process runtime) reads them from there and runs
them. A `file://` path because pyspark ships no hadoop-aws: the driver cannot read `s3a://`
out of the box (the S3 upload itself is tested against a real S3 server in tests/storage)."""

from __future__ import annotations

import io
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.cli.submit import run
from testenv.runtime_image import IMAGE_NAME
from tests.support import kube
from tests.support.waiting import wait_for

pytestmark = pytest.mark.controlplane


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the pods see at the same path (a pod's /tmp is its own, so not under /tmp)."""
    path = Path.home() / ".cache" / "sparkk8s-test-uploads" / secrets.token_hex(4)
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def driver_log(api, namespace: str, name: str) -> str:  # type: ignore[no-untyped-def]
    with kube.session(api) as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log")
    return response.text if response.status_code == 200 else ""


def test_driver_runs_the_uploaded_file_and_its_py_files(
    runtime_plane, runtime_namespace, runtime_admin, shared_dir, tmp_path
):  # type: ignore[no-untyped-def]
    api, namespace = runtime_admin, runtime_namespace
    marker = secrets.token_hex(6)
    src = tmp_path / "src"
    src.mkdir()
    (src / "helpers.py").write_text(f"def greet(name):\n    return 'uploaded-{marker} ' + name\n")
    (src / "etl.py").write_text(
        "import sys\nfrom helpers import greet\nprint(greet(sys.argv[1]), flush=True)\n"
    )
    argv = [
        "--master", f"k8s://{runtime_plane.server}", "--deploy-mode", "cluster",
        "--name", "uploaded-etl",
        "--conf", f"spark.kubernetes.namespace={namespace}",
        "--conf", f"spark.kubernetes.container.image={IMAGE_NAME}",
        "--conf", "spark.kubernetes.container.image.pullPolicy=Never",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--conf", "spark.driver.memory=512m",
        "--conf", f"spark.kubernetes.file.upload.path=file://{shared_dir}",
        "--py-files", str(src / "helpers.py"),
        str(src / "etl.py"), "world",
    ]  # fmt: skip
    kubeconfig = runtime_plane.write_kubeconfig(tmp_path / "kubeconfig", namespace)
    environ = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    assert run(argv, environ=environ, out=io.StringIO(), err=io.StringIO()).exit_code == 0
    uploaded = sorted(p.name for p in shared_dir.rglob("*.py"))
    assert uploaded == ["etl.py", "helpers.py"]

    def finished() -> dict | None:  # type: ignore[type-arg]
        pods = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
        done = [p for p in pods if p["status"].get("phase") in ("Succeeded", "Failed")]
        return done[0] if done else None

    pod = wait_for(finished, 300, "the driver to finish")
    log = driver_log(api, namespace, pod["metadata"]["name"])
    assert pod["status"]["phase"] == "Succeeded", log[-3000:]
    assert f"uploaded-{marker} world" in log
