"""A real S3-compatible server for the upload tests: versitygw over a temp directory.

versitygw (testenv/build_s3.sh builds and caches it) serves the S3 API on 127.0.0.1 and
keeps each bucket as a directory, so a test can see exactly which objects exist. Started
and stopped by pid like the control plane's processes; credentials are random per run.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, built_by, wait_until

BUILD_SCRIPT = Path(__file__).resolve().parent / "build_s3.sh"
HEALTH_PATH = "/health"
START_DEADLINE_SECONDS = 30.0


def find_s3_server() -> Path:
    """$SPARKK8S_S3_SERVER_BIN, else whatever build_s3.sh builds (or finds cached)."""
    return built_by(BUILD_SCRIPT, "SPARKK8S_S3_SERVER_BIN")


class S3Server:
    """versitygw's posix backend on a loopback port; `.endpoint`, `.access_key`, `.secret_key`."""

    def __init__(self) -> None:
        self.access_key = "AK" + secrets.token_hex(8).upper()
        self.secret_key = secrets.token_urlsafe(24)
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="sparkk8s-s3-"))
        self.root = self.workdir / "buckets"
        self.root.mkdir()
        self.process: ManagedProcess | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        binary = find_s3_server()
        argv = [
            str(binary),
            "--port", f"127.0.0.1:{self.port}",
            "--access", self.access_key,
            "--secret", self.secret_key,
            "--health", HEALTH_PATH,
            "--quiet",
            "posix", str(self.root),
        ]  # fmt: skip
        self.process = ManagedProcess("versitygw", argv, self.workdir / "versitygw.log")
        self.process.start()
        try:
            wait_until(self._healthy, START_DEADLINE_SECONDS, "versitygw", [self.process])
        except BaseException:
            self.stop()
            raise
        return self

    def _healthy(self) -> bool:
        with urllib.request.urlopen(self.endpoint + HEALTH_PATH, timeout=1) as response:
            return bool(response.status == 200)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def storage_options(self) -> dict[str, Any]:
        """s3fs keyword arguments for this server."""
        return {
            "key": self.access_key,
            "secret": self.secret_key,
            "client_kwargs": {"endpoint_url": self.endpoint},
        }

    def make_bucket(self, name: str) -> str:
        (self.root / name).mkdir()
        return name

    def objects(self, bucket: str) -> dict[str, bytes]:
        """Every object of `bucket` as the server stores it: key -> content."""
        base = self.root / bucket
        return {
            path.relative_to(base).as_posix(): path.read_bytes()
            for path in sorted(base.rglob("*"))
            if path.is_file()
        }
