"""A real GCS emulator for the gs:// upload tests: fake-gcs-server over a temp directory.

    with GcsServer() as gcs:
        gcs.make_bucket("apps")
        # gcsfs: GCSFileSystem(endpoint_url=gcs.endpoint, token="anon")
        gcs.objects("apps")           # {object name: bytes}, read back through its JSON API

fake-gcs-server (testenv/build_gcs.sh builds it from its Go module into ~/.cache) serves the
JSON and upload APIs over plain HTTP on 127.0.0.1 and keeps its objects under a temp
directory that goes with it. It checks no credentials: any bearer token, or none, is served.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, Server, built_by, wait_until

BUILD_SCRIPT = Path(__file__).resolve().parent / "build_gcs.sh"
START_DEADLINE_SECONDS = 30.0


def find_gcs_server() -> Path:
    """$SPARKK8S_GCS_SERVER_BIN, else what build_gcs.sh builds (or finds cached)."""
    return built_by(BUILD_SCRIPT, "SPARKK8S_GCS_SERVER_BIN")


class GcsServer(Server):
    """fake-gcs-server's filesystem backend on a loopback port; `.endpoint` for gcsfs."""

    def __init__(self) -> None:
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="sparkk8s-gcs-"))
        self.process: ManagedProcess | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GcsServer:
        (self.workdir / "data").mkdir(exist_ok=True)
        argv = [
            str(find_gcs_server()),
            "-scheme", "http",
            "-host", "127.0.0.1",
            "-port", str(self.port),
            # The address it writes into objects' media links (the default is its own name).
            "-external-url", self.endpoint,
            "-public-host", f"127.0.0.1:{self.port}",
            "-backend", "filesystem",
            "-filesystem-root", str(self.workdir / "data"),
            "-log-level", "warn",
        ]  # fmt: skip
        self.process = ManagedProcess("fake-gcs-server", argv, self.workdir / "gcs.log")
        self.process.start()
        try:
            wait_until(self._serving, START_DEADLINE_SECONDS, "fake-gcs-server", [self.process])
        except BaseException:
            self.stop()
            raise
        return self

    def _serving(self) -> bool:
        return "kind" in self._get("/storage/v1/b")

    def _get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(self.endpoint + path, timeout=5) as response:
            return dict(json.load(response))

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def make_bucket(self, name: str) -> str:
        body = json.dumps({"name": name}).encode()
        create = urllib.request.Request(
            self.endpoint + "/storage/v1/b", data=body, method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(create, timeout=5):
            return name

    def objects(self, bucket: str) -> dict[str, bytes]:
        """Every object of `bucket` as the server serves it: name -> content."""
        listing = self._get(f"/storage/v1/b/{bucket}/o")
        names = sorted(item["name"] for item in listing.get("items", []))
        contents = {}
        for name in names:
            quoted = urllib.parse.quote(name, safe="")
            url = f"{self.endpoint}/storage/v1/b/{bucket}/o/{quoted}?alt=media"
            with urllib.request.urlopen(url, timeout=5) as response:
                contents[name] = response.read()
        return contents
