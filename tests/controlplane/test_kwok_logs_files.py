"""The generated container logs and KWOK's config for them, as plain data and files."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from testenv.kwok_logs import DRIVER_LINES, EXECUTOR_LINES, cri_log, write_spark_logs

START = datetime.datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=datetime.UTC)


def test_cri_log_lines_are_time_stream_full_tag_and_text() -> None:
    text = cri_log((("stderr", "INFO a"), ("stdout", "program output")), START)
    assert text.splitlines() == [
        "2026-01-02T03:04:05.250000000Z stderr F INFO a",
        "2026-01-02T03:04:05.251000000Z stdout F program output",
    ]


def test_written_config_points_each_spark_container_at_its_own_file(tmp_path: Path) -> None:
    config_path = write_spark_logs(tmp_path / "logs", START)
    config = json.loads(config_path.read_text())
    assert config["kind"] == "ClusterLogs"
    files = {entry["logsFile"]: entry["containers"] for entry in config["spec"]["logs"]}
    by_container = {containers[0]: Path(path) for path, containers in files.items()}
    driver = by_container["spark-kubernetes-driver"].read_text().splitlines()
    executor = by_container["spark-kubernetes-executor"].read_text().splitlines()
    assert [line.split(" ", 3)[3] for line in driver] == [text for _, text in DRIVER_LINES]
    assert [line.split(" ", 3)[3] for line in executor] == [text for _, text in EXECUTOR_LINES]
    # Dated a day after the start, so since-submission queries during the run keep them.
    assert driver[0].startswith("2026-01-03T03:04:05.25")
