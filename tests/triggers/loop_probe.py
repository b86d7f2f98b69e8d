"""Ten triggers started and followed to the end in a fresh interpreter, as Airflow's
triggerer runs them: the trigger class imported by its classpath on the event loop, then
each trigger's `run` as a task of that loop. Prints, as JSON, every callback of the loop that
took more than the threshold: its thread CPU time, its wall time, and what it was.

    python -m tests.triggers.loop_probe CONN_ID NAMESPACE APP_ID:DRIVER ...

The boundaries are those of asyncio's own slow-callback detection (one `Handle._run`, as
`BaseEventLoop._run_once` times them in debug mode, which is on too); the verdict is on CPU
time, so the machine's load cannot decide it, and asyncio's wall-clock warnings are counted
beside it."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any

# What the triggerer process has loaded before it runs any trigger.
import airflow.jobs.triggerer_job_runner  # noqa: F401
from airflow.sdk._shared.module_loading import import_string

THRESHOLD = 0.2  # seconds: Airflow's own warning threshold for a blocked triggerer loop
CLASSPATH = "airflow_provider_sparkk8s.triggers.spark_k8s.SparkK8sApplicationTrigger"


class SlowCallbacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "took" in message and "seconds" in message:
            self.messages.append(message[:300])


def main(conn_id: str, namespace: str, apps: list[tuple[str, str]]) -> dict[str, Any]:
    slow: list[dict[str, Any]] = []
    original = asyncio.events.Handle._run

    def timed(handle: asyncio.events.Handle) -> None:
        cpu, wall = time.thread_time(), time.perf_counter()
        original(handle)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        if cpu > THRESHOLD or wall > THRESHOLD:
            slow.append({"cpu": round(cpu, 3), "wall": round(wall, 3), "what": repr(handle)[:300]})

    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    warnings = SlowCallbacks()
    logging.getLogger("asyncio").addHandler(warnings)

    async def follow_all() -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        trigger_class = import_string(CLASSPATH)  # on the loop, as the triggerer does

        async def one(app_id: str, driver: str) -> dict[str, Any]:
            trigger = trigger_class(
                application_id=app_id,
                namespace=namespace,
                kubernetes_conn_id=conn_id,
                driver_pod_name=driver,
                resync_interval=5.0,
                stream_logs=True,
                log_interval=1.0,
            )
            events = [event async for event in trigger.run()]
            return dict(events[0].payload)

        return await asyncio.gather(*(one(app, driver) for app, driver in apps))

    loop = asyncio.new_event_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = THRESHOLD
    try:
        payloads = loop.run_until_complete(asyncio.wait_for(follow_all(), 120))
    finally:
        loop.close()
    return {
        "statuses": [p.get("status") for p in payloads],
        "slow": slow,
        "asyncio_warnings": warnings.messages,
    }


if __name__ == "__main__":
    conn, ns, *pairs = sys.argv[1:]
    print(json.dumps(main(conn, ns, [tuple(p.split(":", 1)) for p in pairs])))  # type: ignore[misc]
