"""The real-triggerer benchmark's pure parts: the DAG files it writes, the request count it
reads from kube-apiserver's /metrics, and the per-window figures."""

from __future__ import annotations

import ast

import pytest

from benchmarks.bench_real_triggerer import (
    DAG_ID,
    WARMUP_DAG_ID,
    Snapshot,
    dag_file,
    percentile,
    read_requests,
)
from benchmarks.harness.process_groups import GroupCpu


@pytest.mark.parametrize("peer", ["ours", "kpo"])
def test_the_dag_file_holds_the_measured_dag_and_the_warm_up(peer: str) -> None:
    source = dag_file(peer, 25)
    ast.parse(source)  # a syntax error would only show in the dag processor's log
    assert f'("{DAG_ID}", 25, "app_")' in source
    assert f'("{WARMUP_DAG_ID}", 1, "warmup_")' in source
    operator = "SparkK8sSubmitOperator" if peer == "ours" else "KubernetesPodOperator"
    assert f"            {operator}(" in source
    assert "deferrable=True" in source


def test_only_read_verbs_are_counted() -> None:
    scrape = "\n".join(
        [
            'apiserver_request_total{code="200",resource="pods",verb="LIST"} 7',
            'apiserver_request_total{code="200",resource="pods",verb="WATCH"} 3',
            'apiserver_request_total{code="200",resource="leases",verb="GET"} 10',
            'apiserver_request_total{code="201",resource="pods",verb="POST"} 100',
            'apiserver_request_duration_seconds_count{verb="LIST"} 99',
        ]
    )
    assert read_requests(scrape) == 20


def test_the_windows_figures_are_differences_per_minute() -> None:
    before = Snapshot(
        at=0.0, triggerer=GroupCpu(1, 2), scheduler=GroupCpu(3, 4), statements=100, reads=10
    )
    after = Snapshot(
        at=30.0, triggerer=GroupCpu(2, 4), scheduler=GroupCpu(5, 10), statements=400, reads=70
    )
    figures = before.per_minute(after)
    assert figures == {
        "triggerer_cpu_s": 3.0,
        "scheduler_cpu_s": 2.0,
        "executor_cpu_s": 6.0,
        "statements_per_min": 600.0,
        "reads_per_min": 120.0,
        "seconds": 30.0,
    }


def test_percentiles_take_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99)) == (50.0, 99.0)
    assert percentile([], 0.5) != percentile([], 0.5)  # NaN: nothing was timed
