"""Regenerate the golden captures with real spark-submit (`make parity-refresh`).

For each scenario and Spark line: start a recorder, create the scenario's files in a temp
dir, run that line's spark-submit against the recorder in cluster mode without waiting,
normalise the recorded requests and write them to `golden/<scenario>.<line>.json`.

    python -m tests.parity.runner [--lines 4.3.0,3.5.9,4.2.1,4.1.4,4.0.5] [--missing] [scenario ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testenv.harness.oracle import oracle_environment, spark_submit_path
from testenv.harness.recorder import RecordingServer
from tests.parity.normalise import normalise_submission, normalise_text
from tests.parity.scenarios import (
    ALL_LINES,
    GOLDEN_DIR,
    Scenario,
    all_scenarios,
    golden_path,
    real_tmp,
    uploaded_files,
)


@dataclass(frozen=True)
class OracleRun:
    capture: list[dict[str, Any]]
    uploads: dict[str, str]  # what the upload folder holds afterwards
    tmp_dirs: list[str]
    process: subprocess.CompletedProcess[str]


def run_oracle(scenario: Scenario, line: str, timeout: float = 180) -> OracleRun:
    """Run real spark-submit for one scenario: its requests, uploads and process."""
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp_name, RecordingServer() as server:
        tmp = Path(tmp_name)
        scenario.materialise(tmp)
        home = tmp / ".home"
        home.mkdir()
        argv = [str(spark_submit_path(line)), *scenario.argv(f"k8s://{server.url}", tmp)]
        # Own session, so a timeout can stop the JVM too (the script execs it in a child).
        child = subprocess.Popen(
            argv,
            env=oracle_environment(line, scenario.environment(tmp), home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp,
            start_new_session=True,
        )
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            stdout, stderr = child.communicate()
            stderr += f"\ntimed out after {timeout}s"
        process = subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)
        tmp_dirs = [str(tmp), str(real_tmp(tmp))]
        return OracleRun(
            server.recording.as_list(), uploaded_files(scenario, tmp), tmp_dirs, process
        )


# The launcher's "Error: <message>", else the first line of a JVM stack trace
# ("Exception in thread "main" <class>: <message>").
_ERROR_LINE = re.compile(
    r"^(?:Error: .*|(?:Exception in thread \S+ )?[\w.$]+(?:Exception|Error): .*)$", re.MULTILINE
)


def spark_failure(stderr: str) -> str:
    """The first error line spark-submit printed (what it refused and why)."""
    match = _ERROR_LINE.search(stderr)
    if match is not None:
        return match.group(0).strip()
    return next(
        (line.strip() for line in stderr.splitlines() if "Exception" in line), stderr.strip()
    )


def refresh(scenario: Scenario, line: str) -> tuple[bool, str]:
    run = run_oracle(scenario, line)
    process = run.process
    failed = process.returncode != 0 or not run.capture
    if failed != scenario.expect_failure:
        return False, (process.stderr or process.stdout)[-3000:]
    golden: dict[str, Any] = {"scenario": scenario.name, "spark_version": line}
    normalised = normalise_submission(run.capture, run.uploads, run.tmp_dirs)
    golden["requests"] = normalised["requests"]
    if scenario.upload_dir is not None:
        golden["uploads"] = normalised["uploads"]
    if scenario.expect_failure:
        golden["failure"] = normalise_text(spark_failure(process.stderr), run.tmp_dirs)
    path = golden_path(scenario, line)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    return True, str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", default=",".join(ALL_LINES))
    parser.add_argument("--missing", action="store_true", help="only captures not stored yet")
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args(argv)
    lines = args.lines.split(",")
    selected = [s for s in all_scenarios() if not args.scenarios or s.name in args.scenarios]
    GOLDEN_DIR.mkdir(exist_ok=True)
    failures = 0
    for scenario in selected:
        for line in scenario.spark_lines:
            if line not in lines or (args.missing and golden_path(scenario, line).exists()):
                continue
            ok, detail = refresh(scenario, line)
            print(
                f"{'ok  ' if ok else 'FAIL'} {scenario.name} [{line}] {detail if ok else ''}",
                flush=True,
            )
            if not ok:
                failures += 1
                print(detail, file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
