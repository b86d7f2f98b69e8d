"""The whole-application benchmark's pure parts: the DAG file, the CLIs' arguments, the
order of the ways, the table, and the memory read of a process group."""

from __future__ import annotations

import ast
import os
import resource
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.version_compat import START_FROM_TRIGGER_RENDERS
from benchmarks.bench_whole_app import (
    DAG_ID,
    FLOOR_DAG,
    FLOORS,
    NAMESPACE,
    OPERATOR_WAYS,
    WAYS,
    WORKER_FREE_DAG_ID,
    Run,
    cli_argv,
    dag_file,
    order,
    run_child,
    spark_conf,
    table,
)
from benchmarks.harness.process_groups import groups_rss_pss_kib, rollup_kib

PI = "local:///opt/sparkk8s/examples/pi.py"


def test_the_dag_file_runs_one_pi_deferred_and_one_worker_free() -> None:
    source = dag_file("sparkk8s/spark:4.3.0", "spark", PI)
    ast.parse(source)  # a syntax error would only show in the dag processor's log
    assert f'("{DAG_ID}", {{"deferrable": True}})' in source
    assert f'("{WORKER_FREE_DAG_ID}", {{"start_from_trigger": True}})' in source
    assert f'namespace="{NAMESPACE}"' in source
    assert "application_args=['4', '200000']" in source
    assert '"spark.kubernetes.authenticate.driver.serviceAccountName": "spark"' in source
    assert {WAYS[2]: DAG_ID, WAYS[3]: WORKER_FREE_DAG_ID} == OPERATOR_WAYS


@pytest.mark.skipif(not START_FROM_TRIGGER_RENDERS, reason="worker-free tasks need Airflow 3.3")
def test_both_dags_pass_the_checks_made_when_they_are_parsed() -> None:
    exec(compile(dag_file("sparkk8s/spark:4.3.0", "spark", PI), "bench_whole_app.py", "exec"), {})


def test_both_clis_get_the_same_conf_and_wait_for_the_end() -> None:
    conf = spark_conf("sparkk8s/spark:4.3.0", "spark")
    argv = cli_argv("spark-submit", "https://127.0.0.1:6443", "pi-jvm", conf, PI)
    assert argv[:7] == [
        "spark-submit", "--master", "k8s://https://127.0.0.1:6443", "--deploy-mode", "cluster",
        "--name", "pi-jvm",
    ]  # fmt: skip
    assert argv[-3:] == [PI, "4", "200000"]
    assert "spark.kubernetes.submission.waitAppCompletion=true" in argv
    assert f"spark.kubernetes.namespace={NAMESPACE}" in argv
    assert argv.count("--conf") == len(conf)


def test_each_round_rotates_which_way_goes_first() -> None:
    assert [order(index)[0] for index in range(5)] == [*WAYS, WAYS[0]]
    assert all(sorted(order(index)) == sorted(WAYS) for index in range(4))


def test_the_table_gives_each_ways_runs_and_their_median_and_names_a_failure() -> None:
    stacked = {"scheduler_cpu_s": 4.0, "triggerer_cpu_s": 2.0, "idle_cpu_s": 1.5}
    runs = [
        Run(WAYS[0], 60.0, 10.0, 315.0, True, (8.0, 9.0)),
        Run(WAYS[1], 50.0, 0.2, 27.0, True, (9.0, 9.5)),
        Run(WAYS[2], 55.0, 6.0, 250.0, False, (9.5, 10.0), **stacked, peak_pss_mib=200.0),
        Run(WAYS[3], 52.0, 1.0, 20.0, True, (9.0, 9.0), 0.5, 0.5, 1.0, 12.0),
        Run(WAYS[0], 70.0, 11.0, 320.0, True, (10.0, 11.0)),
    ]
    lines = table(runs).splitlines()
    assert lines[0] == "| waiting on one application | " + " | ".join(WAYS) + " |"
    assert lines[2] == (
        "| wall to the end | 60.0, 70.0 (median 65.0) s | 50.0 s | 55.0 (failed) s | 52.0 s |"
    )
    assert lines[3].startswith("| CPU of the submitting side, user + system (operator ways:")
    assert (
        "| 315.0, 320.0 (median 317.5) MiB | 27.0 MiB | 250.0 (failed) MiB | 20.0 MiB |" in lines[4]
    )
    # The stack's own lines are empty for the CLIs.
    assert lines[5] == (
        "| operator ways: scheduler group CPU, less idle |  |  | 4.00 (failed) s | 0.50 s |"
    )
    assert lines[8] == (
        "| operator ways: peak PSS growth (both groups) |  |  | 200.0 (failed) MiB | 12.0 MiB |"
    )
    assert lines[9] == (
        "| 1-minute load, start-end of each run | 8.0-9.0, 10.0-11.0 | 9.0-9.5 | 9.5-10.0 |"
        " 9.0-9.0 |"
    )
    assert lines[-1] == f"Runs that did not succeed: {WAYS[2]} (its run 1)."


def test_the_floors_table_has_no_stack_lines() -> None:
    runs = [Run(way, 20.0, 8.0, 244.0, True, (1.0, 1.0)) for way in FLOORS]
    lines = table(runs, tuple(FLOORS)).splitlines()
    assert not any("operator ways" in line for line in lines)


def test_a_groups_memory_is_read_from_smaps_rollup() -> None:
    rollup = "55d0-7ffe ---p 00000000 00:00 0 [rollup]\nRss:  2196 kB\nPss:  379 kB\n"
    assert rollup_kib(rollup) == (2196, 379)
    rss, pss = groups_rss_pss_kib((os.getpgid(0),))  # this test's own group
    assert rss >= pss > 0


def test_a_failed_run_is_left_out_of_the_median() -> None:
    runs = [
        Run(WAYS[1], 50.0, 0.2, 27.0, True, (9.0, 9.5)),
        Run(WAYS[1], 11.0, 0.1, 27.0, False, (9.5, 9.0)),
        Run(WAYS[1], 60.0, 0.2, 27.0, True, (9.0, 9.5)),
    ]
    wall = table(runs).splitlines()[2]
    assert "50.0, 11.0 (failed), 60.0 (median 55.0) s" in wall


def test_the_floor_dags_parse() -> None:
    for dag_id, task in FLOORS.values():
        ast.parse(FLOOR_DAG.format(dag_id=dag_id, task=task))


def test_the_launcher_reads_the_tool_not_this_process(tmp_path: Path) -> None:
    """Forked from this test process, /bin/true would read this process's peak RSS."""
    env = {"PATH": "/usr/bin:/bin"}
    ran = run_child("true", ["/bin/true"], env, tmp_path / "true.log")
    assert ran.ok
    mine_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert ran.peak_rss_mib < min(20.0, mine_mib)
    assert not run_child("false", ["/bin/false"], env, tmp_path / "false.log").ok
