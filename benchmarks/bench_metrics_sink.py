"""The metrics' own CPU per application, in one process: what following an application to
its end costs with metrics on, beyond the same follow with them off.

    python -m benchmarks.bench_metrics_sink --apps 10000

Each application is two looks, as the trigger makes them (its driver Running, then
Succeeded), each derived by `look_metrics` and sent with the trigger's tags (100 tasks of one
DAG) inside an event loop, through the sink `airflow_metrics()` would build for StatsD with
InfluxDB-style tags: the per-call sink over Airflow's `Stats` (what the provider used before
the batched sink), then the batched one. The datagrams go to a bound UDP socket nothing reads
(the sender's own cost, as with a StatsD server on another host). The trigger benchmark's
`--metrics-pair` measures the same inside the whole triggerer loop, with its spread.

CPU time on a loaded machine moves by tens of percent between runs; instructions do not.
`--only` runs one sink, so valgrind can count what the metrics add, per application:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null python -m \
        benchmarks.bench_metrics_sink --apps 1000 --only off     # then --only batched

(PYTHONHASHSEED=0 for both). The totals also move with the garbage collector's passes
and with the interpreter's start (about 10 M instructions between two runs of one mode at
1,000 applications), so take the difference between 1,000 and 2,000 applications per mode.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import time
from typing import Any


def looks(apps: int) -> list[tuple[Any, Any]]:
    """(state before, step) of every look, built by the follower from plain pods."""
    from airflow_provider_sparkk8s.application.following.follower import (
        Following,
        FollowSpec,
        observe,
    )
    from testenv.harness.pod_builders import pod, running, terminated

    found = []
    for index in range(apps):
        app = f"spark-{index:032d}"
        following = Following(FollowSpec(app, "bench", driver_pod_name="d"))
        first = observe(following, [pod("d", app=app, phase="Running", containers=[running()])])
        ended = pod("d", app=app, phase="Succeeded", containers=[terminated(0)])
        found += [(None, first), (first.following.state, observe(first.following, [ended]))]
    return found


def cpu_per_application(sink: Any, steps: list[tuple[Any, Any]], apps: int) -> float:
    """Microseconds of CPU per application: derive and send every look, in an event loop
    that yields as a trigger's would (every 20 looks)."""
    from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
        look_metrics,
        send,
        task_tags,
    )

    async def follow() -> float:
        started = time.process_time()
        for index, (before, step) in enumerate(steps):
            if sink.enabled:
                measured = look_metrics(before, step)
                if measured:
                    send(sink, measured, task_tags("bench", "bench", f"t{(index // 2) % 100}"))
            if index % 20 == 0:
                await asyncio.sleep(0)
        flush = getattr(sink, "flush", None)
        if flush is not None:
            flush()
        return time.process_time() - started

    return 1e6 * asyncio.run(follow()) / apps


SINKS = (
    ("off", "metrics off"),
    ("derived", "derived, then dropped"),
    ("per-call", "per-call sink (Airflow's Stats per metric)"),
    ("batched", "batched sink"),
)


class Dropping:
    """Takes every metric and does nothing: what deriving them costs, without a sink."""

    enabled = True

    def incr(self, name: str, count: int, tags: Any) -> None:
        return None

    gauge = timing = incr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=10000)
    # One sink only, for an instruction count under valgrind (see the module's docstring).
    parser.add_argument("--only", choices=[label for label, _ in SINKS])
    args = parser.parse_args()
    unread = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    unread.bind(("127.0.0.1", 0))
    os.environ.update(
        AIRFLOW__METRICS__STATSD_ON="True",
        AIRFLOW__METRICS__STATSD_HOST="127.0.0.1",
        AIRFLOW__METRICS__STATSD_PORT=str(unread.getsockname()[1]),
        AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED="True",
    )
    from airflow import __version__ as airflow_version

    from airflow_provider_sparkk8s.application.metrics.provider_metrics import NO_METRICS
    from airflow_provider_sparkk8s.hooks.airflow_stats import AirflowStatsSink, BatchedStatsdSink
    from airflow_provider_sparkk8s.version_compat import stats, stats_backend

    steps = looks(args.apps)
    batched = BatchedStatsdSink(stats_backend())
    client = stats_backend().statsd
    written: list[int] = []  # lines per datagram the batched sink wrote
    send_datagram = client._send

    def counted(data: str) -> None:
        written.append(data.count("\n") + 1)
        send_datagram(data)

    print(f"{args.apps} applications, two looks each, Airflow {airflow_version}")
    sinks = {
        "off": NO_METRICS,
        "derived": Dropping(),
        "per-call": AirflowStatsSink(stats()),
        "batched": batched,
    }
    for key, label in SINKS:
        if args.only not in (None, key):
            continue
        sink = sinks[key]
        client._send = counted if sink is batched else send_datagram
        print(f"  {label:<45} {cpu_per_application(sink, steps, args.apps):6.1f} us CPU")
    print(f"  the batched sink wrote {sum(written)} metrics in {len(written)} datagrams")
    unread.close()


if __name__ == "__main__":
    main()
