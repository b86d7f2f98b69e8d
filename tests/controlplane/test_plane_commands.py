"""The planes' commands (issue 29, papercut 6): `--help` prints help and starts nothing, and
the real-Spark plane's command prints its ready lines through a pipe while it runs, with a
submitter kubeconfig that works against the documented Roles."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kubernetes import config as k8s_config

from testenv.harness import kube

REPO = Path(__file__).resolve().parents[2]


def _command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


@pytest.mark.parametrize("module", ["testenv.controlplane", "testenv.spark_plane"])
def test_help_prints_help_and_starts_no_plane(module: str, tmp_path: Path) -> None:
    result = subprocess.run(
        _command(module, "--help"),
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: python -m {module}"), result.stdout
    assert "ready" not in result.stdout
    # A started plane makes its temp dir first thing: none was made.
    assert not list(tmp_path.glob("sparkk8s-controlplane-*"))


def _lines_until(process: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    """Lines of the process's piped stdout until one starts with `marker`, read as they arrive
    (a line held in the child's buffer never shows up)."""
    assert process.stdout is not None
    arrived: queue.Queue[str] = queue.Queue()
    stdout = process.stdout

    def pump() -> None:
        for line in stdout:
            arrived.put(line)

    threading.Thread(target=pump, daemon=True).start()
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = arrived.get(timeout=1)
        except queue.Empty:
            assert process.poll() is None, f"exited {process.returncode}: {lines}"
            continue
        lines.append(line.rstrip("\n"))
        if line.startswith(marker):
            return lines
    raise AssertionError(f"no line starting {marker!r} within the deadline: {lines}")


@pytest.mark.controlplane  # starts the plane itself, so no fixture says so
def test_spark_plane_prints_ready_and_kubeconfig_through_a_pipe(tmp_path: Path) -> None:
    process = subprocess.Popen(
        _command("testenv.spark_plane", "--namespace", "piped"),
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": ""},  # stdout is a pipe: block-buffered
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = _lines_until(process, "Ctrl-C stops it", 300)
        assert lines[0].startswith("real-Spark plane ready in "), lines
        assert "real kubelet" in lines[-3], lines
        fields = dict(line.split(":", 1) for line in lines[1:-1])
        kubeconfig = Path(fields["kubeconfig"].split("  (")[0].strip())
        admin_kubeconfig = Path(fields["admin"].strip())
        # The submitter's token may list pods in its namespace (docs/rbac.yaml), and the plane's
        # one node is the real node, Ready.
        submitter = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        with kube.session(submitter) as client:
            assert client.get("/api/v1/namespaces/piped/pods").status_code == 200
            assert client.get("/api/v1/namespaces/default/pods").status_code == 403
        admin = k8s_config.new_client_from_config(config_file=str(admin_kubeconfig))
        nodes = kube.request(admin, "GET", "/api/v1/nodes")["items"]
        assert [
            condition["status"]
            for node in nodes
            for condition in node["status"]["conditions"]
            if condition["type"] == "Ready"
        ] == ["True"], nodes
        workdir = kubeconfig.parent
        assert workdir.is_dir()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=120)
    assert code == 0
    assert not workdir.exists()  # stopped, temp dir removed
