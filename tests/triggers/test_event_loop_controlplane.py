"""No trigger blocks the triggerer's event loop (issue 43): ten triggers started and followed
to the end against the real control plane, in a fresh interpreter, and no callback of the
loop takes more than 0.2 CPU-seconds (tests/triggers/loop_probe.py says how it is measured).

Before the fix, importing the trigger class (which Airflow does on the loop) loaded about
seventy modules of the provider there: 0.28 CPU-seconds on a quiet machine, 1.7 s of a
loaded loop. Now the class's module is light, and what following needs loads in a thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testenv.harness.pods import create, new_app_id, spark_pod
from tests.triggers.spark_pods import connection_for

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


def test_ten_triggers_start_and_follow_without_blocking_the_loop(
    monkeypatch, kubeconfig, namespace, kube_admin
):
    conn_id = connection_for(monkeypatch, kubeconfig)
    pairs = []
    for index in range(10):
        app, driver = new_app_id(), f"loop-{index}-driver"
        create(kube_admin, namespace, spark_pod(driver, app))
        pairs.append(f"{app}:{driver}")
    done = subprocess.run(
        [sys.executable, "-m", "tests.triggers.loop_probe", conn_id, namespace, *pairs],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(report, indent=1))
    assert report["statuses"] == ["success"] * 10
    blocked = [callback for callback in report["slow"] if callback["cpu"] > 0.2]
    assert blocked == [], blocked
