"""The idle watcher's decisions (the program itself runs in the driver pod: the real-Spark
test tests/runtime/test_connect_server_runtime.py watches it end a server)."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_sparkk8s.services.connect import idle_watch_program as watch
from airflow_provider_sparkk8s.services.connect.server_lifecycle import watcher_source

RUNNING = [{"jobId": 0, "status": "RUNNING"}]
DONE = [{"jobId": 0, "status": "SUCCEEDED"}]


def test_a_server_that_never_answered_is_not_idle_until_its_lifetime_ends():
    activity = watch.observe(watch.Activity(0, 0), 100, None)
    assert watch.verdict(activity, 100, idle_timeout=30, max_lifetime=600) is None
    assert watch.verdict(activity, 600, idle_timeout=30, max_lifetime=600) == "lifetime"


def test_idle_counts_from_the_last_job():
    activity = watch.observe(watch.Activity(0, 0), 10, [])
    assert watch.verdict(activity, 29, 30, 600) is None
    activity = watch.observe(activity, 20, RUNNING)  # a job runs: active
    assert watch.verdict(activity, 45, 30, 600) is None
    activity = watch.observe(activity, 45, DONE)  # same count, none running
    assert activity.last_active == 20
    assert watch.verdict(activity, 50, 30, 600) == "idle"
    activity = watch.observe(activity, 50, [*DONE, {"jobId": 1, "status": "SUCCEEDED"}])
    assert watch.verdict(activity, 60, 30, 600) is None  # a new job ran between two looks
    # The status API keeps the newest jobs only: a newer id counts, not a longer list.
    activity = watch.observe(activity, 90, [{"jobId": 2, "status": "SUCCEEDED"}])
    assert activity.last_active == 90


def test_a_driver_that_stops_answering_has_ended():
    activity = watch.observe(watch.Activity(0, 0), 1, [])
    for now in (2, 3):
        activity = watch.observe(activity, now, None)
        assert watch.verdict(activity, now, 300, 600) is None
    activity = watch.observe(activity, 4, None)
    assert watch.verdict(activity, 4, 300, 600) == "driver gone"


def test_the_program_is_standard_library_only():
    source = watcher_source()
    assert source == Path(watch.__file__).read_text()
    # Read line by line, not with ast.parse: CPython 3.11's AST validator can fail with
    # "AST constructor recursion depth mismatch" while another thread of the session compiles
    # (seen once in make check). A line that only looks like an import counts too, so the
    # check errs on the strict side.
    imported = set()
    for line in source.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "import":
            imported |= {name.split(".")[0] for name in " ".join(words[1:]).split(",")}
        elif len(words) >= 4 and words[0] == "from" and words[2] == "import":
            imported.add(words[1].split(".")[0])
    imported = {name.strip().split(" as ")[0].strip() for name in imported}
    assert {"json", "urllib"} <= imported, imported  # the reader sees the program's imports
    assert imported <= {
        "__future__",
        "json",
        "os",
        "socket",
        "ssl",
        "sys",
        "time",
        "urllib",
        "dataclasses",
    }


def test_a_terminated_spark_container_is_read_from_the_pods_status():
    def pod(state):
        return {"status": {"containerStatuses": [
            {"name": "connect-idle-watch", "state": {"running": {}}},
            {"name": "spark-kubernetes-driver", "state": state},
        ]}}  # fmt: skip

    assert watch.driver_terminated(pod({"terminated": {"exitCode": 1}}))
    assert not watch.driver_terminated(pod({"running": {}}))
    assert not watch.driver_terminated({"status": {}})


def test_a_refused_delete_is_tried_again_next_round(monkeypatch, capsys):
    """A busy API server that times out the watcher's DELETE does not leave the idle server
    up until its lifetime: the watcher tries again after its next look."""
    clock = iter(float(t) for t in range(0, 1000, 10))
    monkeypatch.setattr(watch.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(watch.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(watch, "_port_open", lambda host, port: True)
    monkeypatch.setattr(watch, "_jobs", lambda base: DONE)
    deletes: list[str] = []

    def own_pod(namespace: str, name: str, method: str = "GET") -> dict:
        deletes.append(method)
        if len(deletes) == 1:
            raise TimeoutError("timed out")
        return {}

    monkeypatch.setattr(watch, "_own_pod", own_pod)
    for key, value in {
        "IDLE_TIMEOUT_SECONDS": "15", "MAX_LIFETIME_SECONDS": "600", "POD_IP": "10.0.0.9",
        "POD_NAMESPACE": "ns", "POD_NAME": "server-driver",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    assert watch.main() == 0
    assert deletes == ["DELETE", "DELETE"]
    assert "trying again: timed out" in capsys.readouterr().err
