"""Spark's History Server on loopback, reading an event log folder on this host.

    with HistoryServer(events) as history:
        # drivers on the real node write there (spark.eventLog.dir=file:<events>, a hostPath)
        history.wait_for_application(app_id, 120)
        history.api("applications/" + app_id + "/jobs")

`org.apache.spark.deploy.history.HistoryServer` from the pyspark distribution the parity
tests install (testenv/runtime_image.py's `pyspark_venv`), started with `java` directly
(no `sbin/start-history-server.sh`: it daemonizes, and we stop the server by its own pid).
It binds 127.0.0.1 (SPARK_LOCAL_IP) and rescans the folder every second. The real node's
pods mount a host folder (hostPath), so a host folder is the "shared path" of a cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Self

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, Server, wait_until
from testenv.runtime_image import SPARK_VERSION, distribution_jars, pyspark_venv

HISTORY_SERVER_CLASS = "org.apache.spark.deploy.history.HistoryServer"


class HistoryServer(Server):
    """One History Server on a free loopback port; stopped by its pid."""

    def __init__(
        self, log_dir: Path, spark_version: str = SPARK_VERSION, workdir: Path | None = None
    ):
        self.log_dir = log_dir
        self.port = free_port()
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="sparkk8s-history-"))
        jars = distribution_jars(pyspark_venv(spark_version))
        self._process = ManagedProcess(
            "history-server",
            [
                "java",
                "-Xmx384m",
                # A small, quick JVM: the machine's cores run the drivers too.
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                f"{jars}/*",
                f"-Dspark.history.fs.logDirectory=file:{log_dir}",
                f"-Dspark.history.ui.port={self.port}",
                "-Dspark.history.fs.update.interval=1s",
                HISTORY_SERVER_CLASS,
            ],
            self.workdir / "history-server.log",
            env={"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(jars.parent)},
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def api(self, path: str) -> Any:
        """GET `/api/v1/<path>` as JSON."""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=30) as response:
            return json.loads(response.read())

    def applications(self) -> list[dict[str, Any]]:
        return list(self.api("applications"))

    def wait_for_application(self, app_id: str, timeout: float) -> dict[str, Any]:
        """The application, once the server lists it as completed (the driver's last event
        written and the folder rescanned)."""

        def completed() -> bool:
            try:
                app = self.api(f"applications/{app_id}")
            except urllib.error.HTTPError:
                return False
            return bool(app["attempts"]) and all(a["completed"] for a in app["attempts"])

        wait_until(completed, timeout, f"the History Server to list {app_id} completed",
                   watch=[self._process])  # fmt: skip
        return dict(self.api(f"applications/{app_id}"))

    def start(self) -> Self:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._process.start()
        wait_until(lambda: isinstance(self.applications(), list), 300,
                   "the History Server's REST API", watch=[self._process])  # fmt: skip
        return self

    def stop(self) -> None:
        self._process.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self) -> str:
        return self._process.log_tail()


def main() -> None:  # pragma: no cover - a manual look: python -m testenv.history_server DIR
    import sys
    import time

    folder = Path(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
    with HistoryServer(folder) as server:
        print(server.url, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
