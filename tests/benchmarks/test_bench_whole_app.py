"""The whole-application benchmark's pure parts: the DAG file, the CLIs' arguments, the
order of the ways, and the table."""

from __future__ import annotations

import ast
import resource
from pathlib import Path

from benchmarks.bench_whole_app import (
    DAG_ID,
    FLOOR_DAG,
    FLOORS,
    NAMESPACE,
    WAYS,
    Run,
    cli_argv,
    dag_file,
    order,
    run_child,
    spark_conf,
    table,
)

PI = "local:///opt/sparkk8s/examples/pi.py"


def test_the_dag_file_defers_one_pi_in_the_benchmarks_namespace() -> None:
    source = dag_file("sparkk8s/spark:4.3.0", "spark", PI)
    ast.parse(source)  # a syntax error would only show in airflow dags test's output
    assert f'DAG("{DAG_ID}"' in source
    assert f'namespace="{NAMESPACE}"' in source
    assert "application_args=['4', '200000']" in source
    assert "deferrable=True" in source
    assert '"spark.kubernetes.authenticate.driver.serviceAccountName": "spark"' in source


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
    assert [order(index)[0] for index in range(4)] == [WAYS[0], WAYS[1], WAYS[2], WAYS[0]]
    assert all(sorted(order(index)) == sorted(WAYS) for index in range(3))


def test_the_table_gives_each_ways_runs_and_their_median_and_names_a_failure() -> None:
    runs = [
        Run(WAYS[0], 60.0, 10.0, 315.0, True, (8.0, 9.0)),
        Run(WAYS[1], 50.0, 0.2, 27.0, True, (9.0, 9.5)),
        Run(WAYS[2], 55.0, 6.0, 250.0, False, (9.5, 10.0)),
        Run(WAYS[0], 70.0, 11.0, 320.0, True, (10.0, 11.0)),
    ]
    lines = table(runs).splitlines()
    assert lines[0] == "| waiting on one application | " + " | ".join(WAYS) + " |"
    assert lines[2] == (
        "| wall to the end | 60.0, 70.0 (median 65.0) s | 50.0 s | 55.0 (failed) s |"
    )
    assert "| 315.0, 320.0 (median 317.5) MiB | 27.0 MiB | 250.0 (failed) MiB |" in lines[4]
    assert lines[5] == (
        "| 1-minute load, start-end of each run | 8.0-9.0, 10.0-11.0 | 9.0-9.5 | 9.5-10.0 |"
    )
    assert lines[-1] == f"Runs that did not succeed: {WAYS[2]} (its run 1)."


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
