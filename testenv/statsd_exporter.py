"""Prometheus' statsd_exporter on loopback: StatsD over UDP in, Prometheus text on /metrics out.

    with StatsdExporter() as exporter:
        # Airflow's [metrics] statsd_host=127.0.0.1, statsd_port=exporter.udp_port
        samples = exporter.samples()        # {(name, frozenset(labels.items())): value}

The binary comes from `testenv/build_statsd_exporter.sh` (built from its Go module at a
pinned release into ~/.cache). Its TCP StatsD listener is off; UDP and HTTP bind 127.0.0.1.
Without a mapping file it keeps a metric's name (dots become underscores), turns
InfluxDB-style tags (`name,tag=value:1|c`) into labels, and sends a timer as a summary in
seconds (`_sum`, `_count` and quantiles).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import urllib.request
from pathlib import Path
from typing import Self

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, Server, built_by, wait_until

BUILD_SCRIPT = Path(__file__).resolve().parent / "build_statsd_exporter.sh"
Sample = tuple[str, frozenset[tuple[str, str]]]
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def find_statsd_exporter() -> Path:
    """$SPARKK8S_STATSD_EXPORTER_BIN, or what build_statsd_exporter.sh builds (or finds)."""
    path = built_by(BUILD_SCRIPT, "SPARKK8S_STATSD_EXPORTER_BIN")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"statsd_exporter is not an executable at {path}")
    return path


def free_udp_port() -> int:
    return free_port(socket.SOCK_DGRAM)


def parse_samples(text: str) -> dict[Sample, float]:
    """Prometheus' text format as {(name, labels): value}; comments are skipped."""
    samples: dict[Sample, float] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match is None or line.startswith("#"):
            continue
        name, labels, value = match.groups()
        samples[(name, frozenset(_LABEL.findall(labels or "")))] = float(value)
    return samples


class StatsdExporter(Server):
    """statsd_exporter on free loopback ports; stopped by its pid."""

    def __init__(self, workdir: Path | None = None, binary: Path | None = None):
        self.binary = binary or find_statsd_exporter()
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="sparkk8s-statsd-"))
        self.udp_port = free_udp_port()
        self.http_port = free_port()
        self._process = ManagedProcess(
            "statsd_exporter",
            [
                str(self.binary),
                f"--statsd.listen-udp=127.0.0.1:{self.udp_port}",
                "--statsd.listen-tcp=",
                f"--web.listen-address=127.0.0.1:{self.http_port}",
                "--log.level=warn",
            ],
            self.workdir / "statsd_exporter.log",
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def metrics_text(self) -> str:
        url = f"http://127.0.0.1:{self.http_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read().decode()

    def samples(self, prefix: str = "") -> dict[Sample, float]:
        """The scrape's samples whose name starts with `prefix`."""
        return {
            key: value
            for key, value in parse_samples(self.metrics_text()).items()
            if key[0].startswith(prefix)
        }

    def start(self) -> Self:
        self._process.start()
        wait_until(
            lambda: "statsd_exporter_build_info" in self.metrics_text(),
            30,
            "statsd_exporter /metrics",
            watch=[self._process],
        )
        return self

    def stop(self) -> None:
        self._process.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
