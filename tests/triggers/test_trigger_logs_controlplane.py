"""The trigger copies the driver's log into the task log, on the real control plane:
KWOK's kubelet server replays the generated Spark driver log (testenv/kwok_logs.py)
through the API server's pods/log."""

from __future__ import annotations

import asyncio
import time

import pytest

from testenv.harness.kube import request
from testenv.harness.pods import (
    HOLD,
    RUN_MS,
    create,
    new_app_id,
    phase,
    spark_pod,
    wait_for_pod,
)
from testenv.kwok_logs import DRIVER_LINES
from tests.triggers import spark_pods
from tests.triggers.spark_pods import connection_for, final_event

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

EXPECTED = [text for _, text in DRIVER_LINES]


@pytest.fixture
def conn_id(monkeypatch, kubeconfig):
    return connection_for(monkeypatch, kubeconfig)


def make_trigger(conn_id, namespace, app_id, driver, **settings):
    return spark_pods.make_trigger(
        conn_id, namespace, app_id, driver, **{"stream_logs": True, "log_interval": 0.3, **settings}
    )


class TaskLog:
    """The trigger's structlog logger writes the task log to stdout: what it said so far."""

    def __init__(self, capsys):
        self.capsys = capsys
        self.text = ""

    def driver_lines(self) -> list[str]:
        self.text += self.capsys.readouterr().out
        return [
            line.split("] [driver] ", 1)[1].split(" [airflow_provider_sparkk8s.")[0].strip()
            for line in self.text.splitlines()
            if "] [driver] " in line
        ]


async def test_streams_each_driver_line_once_while_running_then_reports_success(
    conn_id, namespace, kube_admin, capsys
):
    task_log = TaskLog(capsys)
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("log-driver", app, annotations={HOLD: "true"}))
    trigger = make_trigger(conn_id, namespace, app, "log-driver")
    task = asyncio.create_task(final_event(trigger))

    # The lines arrive while the driver is still running, not only at the end.
    deadline = time.monotonic() + 60
    while task_log.driver_lines() != EXPECTED:
        assert not task.done(), task
        assert time.monotonic() < deadline, task_log.driver_lines()
        await asyncio.sleep(0.05)
    pod = await asyncio.to_thread(
        request, kube_admin, "GET", f"/api/v1/namespaces/{namespace}/pods/log-driver"
    )
    assert phase(pod) == "Running"

    await asyncio.to_thread(
        request,
        kube_admin,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/log-driver",
        {"metadata": {"annotations": {HOLD: "false", RUN_MS: "0"}}},
        "application/merge-patch+json",
    )
    payload = await task
    assert (payload["status"], payload["state"]) == ("success", "succeeded")
    # Every later poll (and the final one) re-read the same second: nothing repeated.
    assert task_log.driver_lines() == EXPECTED
    assert any(line.startswith("driver program output") for line in task_log.driver_lines())


async def test_a_short_driver_still_gets_its_log_copied_at_the_end(
    conn_id, namespace, kube_admin, capsys
):
    task_log = TaskLog(capsys)
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("quick-driver", app, annotations={RUN_MS: "200"}))
    wait_for_pod(
        kube_admin, namespace, "quick-driver", lambda p: phase(p) == "Succeeded", 60, "Succeeded"
    )
    # One poll a minute: only the final poll, at the terminal state, can copy the lines.
    trigger = make_trigger(conn_id, namespace, app, "quick-driver", log_interval=60.0)
    payload = await final_event(trigger)
    assert payload["status"] == "success"
    assert task_log.driver_lines() == EXPECTED
    # The final state follows the driver's last line (issue 29, papercut 11: it came before).
    lines = task_log.text.splitlines()
    last_driver_line = max(i for i, line in enumerate(lines) if "] [driver] " in line)
    final_states = [
        i
        for i, line in enumerate(lines)
        if f"Spark application {app}: " in line and "succeeded" in line
    ]
    # (Airflow 3.0 writes each line twice, in two formats: the first copy counts.)
    assert final_states and min(final_states) > last_driver_line, lines[last_driver_line:]


async def test_no_driver_lines_when_streaming_is_off(conn_id, namespace, kube_admin, capsys):
    task_log = TaskLog(capsys)
    app = new_app_id()
    create(kube_admin, namespace, spark_pod("quiet-driver", app, annotations={RUN_MS: "1000"}))
    trigger = make_trigger(conn_id, namespace, app, "quiet-driver", stream_logs=False)
    payload = await final_event(trigger)
    assert payload["status"] == "success"
    assert task_log.driver_lines() == []
