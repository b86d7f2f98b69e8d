"""The real-triggerer benchmark's pure parts: the DAG files it writes, Airflow's settings, the
request count it reads from kube-apiserver's /metrics, the per-window figures, the stages a
resumed task waits through, and the table (a run that stopped short included)."""

from __future__ import annotations

import argparse
import ast

import pytest

from airflow_provider_sparkk8s.version_compat import START_FROM_TRIGGER_RENDERS
from benchmarks.bench_real_triggerer import (
    DAG_ID,
    DRIVER_CPU,
    FINAL_STAGE,
    STAGES,
    SUBMIT_STAGE,
    WARMUP_DAG_ID,
    NotReached,
    Resume,
    Snapshot,
    airflow_settings,
    all_requests,
    allowed,
    capacity_note,
    dag_file,
    deferred_all,
    kwok_nodes,
    largest_completed,
    percentile,
    read_requests,
    stage_percentiles,
    stages_of,
    table,
)
from benchmarks.harness.process_groups import GroupCpu


@pytest.mark.parametrize("peer", ["ours", "worker-free", "kpo"])
def test_the_dag_file_holds_the_measured_dag_and_the_warm_up(peer: str) -> None:
    source = dag_file(peer, 25)
    ast.parse(source)  # a syntax error would only show in the dag processor's log
    assert f'("{DAG_ID}", 25, "app_")' in source
    assert f'("{WARMUP_DAG_ID}", 1, "warmup_")' in source
    operator = "KubernetesPodOperator" if peer == "kpo" else "SparkK8sSubmitOperator"
    assert f"            {operator}(" in source
    mode = "start_from_trigger=True" if peer == "worker-free" else "deferrable=True"
    assert f"                {mode},\n" in source
    assert ("deferrable=True" in source) != (peer == "worker-free")


@pytest.mark.skipif(not START_FROM_TRIGGER_RENDERS, reason="worker-free tasks need Airflow 3.3")
def test_the_worker_free_tasks_pass_the_checks_made_when_the_dag_is_parsed() -> None:
    # Refused, a task would fail in the dag processor, and the run would wait for no DAG.
    exec(compile(dag_file("worker-free", 2), "bench_triggerer.py", "exec"), {})


def test_only_read_verbs_are_counted() -> None:
    scrape = "\n".join(
        [
            'apiserver_request_total{code="200",resource="pods",verb="LIST"} 7',
            'apiserver_request_total{code="200",resource="pods",verb="WATCH"} 3',
            'apiserver_request_total{code="200",resource="leases",verb="GET"} 10',
            'apiserver_request_total{code="201",resource="pods",verb="POST"} 100',
            'apiserver_request_total{code="200",resource="pods",subresource="log",verb="CONNECT"} 5',
            'apiserver_request_total{code="101",resource="pods",subresource="exec",verb="CONNECT"} 9',
            'apiserver_request_duration_seconds_count{verb="LIST"} 99',
        ]
    )
    assert read_requests(scrape) == 25  # a pod log read is a CONNECT; an exec is no read
    assert read_requests(scrape, logs_only=True) == 5
    assert all_requests(scrape) == 134  # every verb, the worker-free trigger's creates too


def test_the_windows_figures_are_differences_per_minute() -> None:
    before = Snapshot(
        at=0.0,
        triggerer=GroupCpu(1, 2),
        scheduler=GroupCpu(3, 4),
        statements=100,
        reads=10,
        log_reads=4,
        requests=20,
    )
    after = Snapshot(
        at=30.0,
        triggerer=GroupCpu(2, 4),
        scheduler=GroupCpu(5, 10),
        statements=400,
        reads=70,
        log_reads=34,
        requests=200,
    )
    figures = before.per_minute(after)
    assert figures == {
        "triggerer_cpu_s": 3.0,
        "scheduler_cpu_s": 2.0,
        "executor_cpu_s": 6.0,
        "statements_per_min": 600.0,
        "reads_per_min": 120.0,
        "log_reads_per_min": 60.0,
        "requests_per_min": 360.0,
        "seconds": 30.0,
    }


def test_percentiles_take_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99)) == (50.0, 99.0)
    assert percentile([], 0.5) != percentile([], 0.5)  # NaN: nothing was timed


def test_a_thousand_tasks_fit_the_triggerer_beside_the_warm_up() -> None:
    settings = airflow_settings(1000, "postgresql://x", parallelism=8)
    assert int(settings["AIRFLOW__TRIGGERER__CAPACITY"]) > 1000
    assert int(settings["AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG"]) == 1000
    assert int(settings["AIRFLOW__CORE__DEFAULT_POOL_TASK_SLOT_COUNT"]) >= 1000
    # Airflow's own parse cadence, and no queued-timeout shorter than a slow executor start.
    assert settings["AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL"] == "30"
    assert int(settings["AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT"]) >= 3600
    assert airflow_settings(100, "postgresql://x", 8)["AIRFLOW__TRIGGERER__CAPACITY"] == "1000"


def test_a_raised_capacity_says_how_many_triggerers_the_default_needs() -> None:
    assert capacity_note(100) == "1,000 (the default)"
    assert capacity_note(3000) == "3,050, raised: at the default 1,000, 3 triggerers"
    settings = airflow_settings(3000, "postgresql://x", parallelism=8)
    assert settings["AIRFLOW__TRIGGERER__CAPACITY"] == "3050"


def test_deferral_is_awaited_until_all_are_deferred_and_stops_on_a_failure() -> None:
    assert not deferred_all({"deferred": 999, "running": 1}, 1000)
    assert deferred_all({"deferred": 1000}, 1000)
    with pytest.raises(NotReached, match="up_for_retry"):
        deferred_all({"deferred": 10, "up_for_retry": 1}, 1000)


def test_each_stage_is_timed_from_its_own_two_moments() -> None:
    seen = {
        "created": {"a": 90.0, "b": 95.0},
        "running": {"a": 92.0},  # b's Running not seen
        "changed": {"a": 100.0, "b": 200.0},
    }
    resumes = {
        "a": Resume("success", scheduled=101.0, queued=103.0, ended=107.0),
        "b": Resume("success", scheduled=202.0, queued=0.0, ended=210.0),  # never queued
        "c": Resume("success", scheduled=1.0, queued=2.0, ended=3.0),  # change not seen
    }
    stages = stage_percentiles(seen, resumes)
    assert list(stages) == [name for name, _, _ in STAGES]
    submit, total, event, slot, process = (stages[name] for name, _, _ in STAGES)
    assert submit == (2.0, 2.0)
    assert total == (7.0, 10.0)
    assert event == (1.0, 2.0)
    assert slot == (2.0, 2.0)  # only a's: b has no queued time
    assert process == (4.0, 4.0)


def test_a_worker_free_task_is_timed_without_the_resume() -> None:
    assert stages_of("worker-free") == (SUBMIT_STAGE, FINAL_STAGE)
    assert stages_of("ours") == STAGES == stages_of("kpo")
    seen = {"created": {"a": 10.0}, "running": {"a": 13.0}, "changed": {"a": 100.0}}
    # Its scheduled_dttm is the first scheduling's, before its driver existed.
    resumes = {"a": Resume("success", scheduled=5.0, queued=0.0, ended=101.5)}
    stages = stage_percentiles(seen, resumes, stages_of("worker-free"))
    assert stages == {SUBMIT_STAGE[0]: (3.0, 3.0), FINAL_STAGE[0]: (1.5, 1.5)}


def finished_row() -> dict[str, object]:
    window = {
        "triggerer_cpu_s": 6.0,
        "scheduler_cpu_s": 20.0,
        "executor_cpu_s": 300.0,
        "statements_per_min": 6000.0,
        "reads_per_min": 25.0,
        "log_reads_per_min": 10.0,
        "requests_per_min": 40.0,
        "seconds": 120.0,
    }
    return {
        "peer": "ours",
        "apps": 1000,
        "deferred_s": 400.0,
        "running_s": 410.0,
        "capacity": "1,050, raised: at the default 1,000, 1 triggerers",
        "pss_per_app_kib": 200.0,
        "start": window,
        "quiet": window,
        "release": window,
        "stages": {name: (1.5, 9.0) for name, _, _ in STAGES},
        "timed": 998,
        "failed": 0,
        "load": 12.3,
    }


def test_the_table_has_a_column_a_run_and_says_where_a_run_stopped() -> None:
    stopped = {
        "peer": "kpo",
        "apps": 1000,
        "capacity": "1,050, raised: at the default 1,000, 1 triggerers",
        "not_reached": "1000 tasks of bench_triggerer deferred: not within 3600 s",
        "states": {"deferred": 640, "scheduled": 360},
        "evidence": "triggers 640 (640 assigned)",
        "load": 15.0,
    }
    text = table([finished_row(), stopped], per_second=5)
    lines = text.splitlines()
    assert lines[0] == (
        "| figure | SparkK8sSubmitOperator, N = 1,000 | KubernetesPodOperator, N = 1,000 |"
    )
    deferred = lines[2]
    assert "| 400 s (2.5 a second) |" in deferred
    assert "not reached: 1000 tasks of bench_triggerer deferred: not within 3600 s" in deferred
    assert "'deferred': 640" in deferred
    assert "triggers 640 (640 assigned)" in deferred
    assert "| held: triggerer CPU a minute | 3.0 s (3.0 ms an application) |  |" in lines
    assert "| release: all N ended after the release began | 120 s (8.3 a second) |  |" in lines
    assert "| 1-minute load when the run ended | 12.3 | 15.0 |" in lines
    capacity = "1,050, raised: at the default 1,000, 1 triggerers"
    assert f"| [triggerer] capacity | {capacity} | {capacity} |" in lines
    assert "- ours N=1000: 998 timed" in lines
    assert "- KubernetesPodOperator: the largest N completed here, 0" in lines


def test_a_worker_free_column_says_it_has_no_resume() -> None:
    row = finished_row() | {"peer": "worker-free"}
    row["stages"] = {name: (1.5, 9.0) for name, _, _ in stages_of("worker-free")}
    lines = table([row], per_second=5).splitlines()
    assert lines[0] == "| figure | SparkK8sSubmitOperator, worker-free, N = 1,000 |"
    assert "| submit -> driver Running, p50 / p99 | 1.5 / 9.0 s |" in lines
    assert "| change -> scheduled (the trigger's event), p50 / p99 | none: no task process |" in (
        lines
    )


def test_the_largest_n_is_the_last_before_a_peer_stopped_short() -> None:
    rows = [
        {"peer": "worker-free", "apps": 1000},
        {"peer": "ours", "apps": 1000},
        {"peer": "worker-free", "apps": 2000},
        {"peer": "ours", "apps": 2000, "not_reached": "..."},
        {"peer": "worker-free", "apps": 3000, "not_reached": "..."},
    ]
    assert largest_completed(rows) == {"ours": 1000, "worker-free": 2000}
    assert largest_completed(rows[:3]) == {}  # none stopped short: nothing found yet


def test_a_wait_is_cut_to_what_is_left_before_the_stop() -> None:
    unbounded = argparse.Namespace(deadline=3600.0, stop_by=None)
    assert allowed(unbounded, now=0.0) == 3600.0
    bounded = argparse.Namespace(deadline=3600.0, stop_by=1000.0)
    assert allowed(bounded, now=400.0) == 600.0
    assert allowed(bounded, now=2000.0) == 0.0
    assert allowed(argparse.Namespace(deadline=60.0, stop_by=1000.0), now=0.0) == 60.0


@pytest.mark.parametrize("apps", [100, 300, 1000, 3000])
def test_kwok_holds_every_driver_running_at_once(apps: int) -> None:
    from testenv.controlplane import NODE_CAPACITY

    nodes = kwok_nodes(apps)
    assert nodes * int(NODE_CAPACITY["pods"]) > apps
    millicores = int(DRIVER_CPU.removesuffix("m"))
    assert nodes * int(NODE_CAPACITY["cpu"]) * 1000 >= apps * millicores
    assert f'"spark.kubernetes.driver.request.cores": "{DRIVER_CPU}"' in dag_file("ours", apps)
