"""The run summary's numbers from Spark's REST API JSON (application/ui/run_summary.py), on
plain data shaped as Spark 4.3's History Server answers."""

from __future__ import annotations

from airflow_provider_sparkk8s.application.ui.run_summary import (
    StageAttempt,
    last_attempt_id,
    slowest_stage,
    spark_time_ms,
    summarize,
    table,
    worth_reading,
)

APP = {"id": "spark-1", "attempts": [{"duration": 41234, "completed": True}]}
JOBS = [{"jobId": 0, "status": "SUCCEEDED"}, {"jobId": 1, "status": "FAILED"}]


def stage(stage_id, status="COMPLETE", attempt=0, start="05:00:00.000", end="05:00:01.000", **m):
    return {
        "stageId": stage_id,
        "attemptId": attempt,
        "status": status,
        "name": f"count at job.py:{stage_id}",
        "firstTaskLaunchedTime": f"2026-12-02T{start}GMT" if start else None,
        "completionTime": f"2026-12-02T{end}GMT" if end else None,
        **m,
    }


STAGES = [
    stage(0, numCompleteTasks=4, inputBytes=100, shuffleWriteBytes=2000, jvmGcTime=30),
    stage(1, numCompleteTasks=3, shuffleReadBytes=2000, memoryBytesSpilled=7, end="05:00:04.500"),
    stage(2, "FAILED", numFailedTasks=2, numKilledTasks=1, diskBytesSpilled=9, jvmGcTime=5),
    stage(3, "SKIPPED", start=None, end=None, inputBytes=999999, numCompleteTasks=99),
    stage(4, numCompleteTasks=2, outputBytes=512, numFailedTasks=1),
]
EXECUTORS = [{"id": "driver"}, {"id": "1"}, {"id": "2"}]


def test_the_numbers_sum_the_stage_attempts_that_ran():
    summary = summarize(APP, JOBS, STAGES, EXECUTORS, {"duration": [200.0, 3100.0]})
    xcom = summary.to_xcom()
    assert {k: v for k, v in xcom.items() if k != "slowest_stage"} == {
        "application_id": "spark-1",
        "duration_ms": 41234,
        "jobs": 2,
        "failed_jobs": 1,
        "stages": 4,
        "failed_stages": 1,
        "skipped_stages": 1,
        "tasks": 9,
        "failed_tasks": 3,
        "killed_tasks": 1,
        "executors": 2,
        "input_bytes": 100,
        "output_bytes": 512,
        "shuffle_read_bytes": 2000,
        "shuffle_write_bytes": 2000,
        "memory_spilled_bytes": 7,
        "disk_spilled_bytes": 9,
        "gc_time_ms": 35,
    }
    assert xcom["slowest_stage"] == {
        "stage_id": 1,
        "attempt_id": 0,
        "name": "count at job.py:1",
        "wall_ms": 4500,
        "median_task_ms": 200.0,
        "max_task_ms": 3100.0,
        "skew": 15.5,
    }


def test_the_slowest_stage_is_a_finished_attempt_with_the_longest_wall_time():
    running = stage(9, "ACTIVE", end=None)
    retried = stage(5, attempt=1, start="05:00:00.000", end="05:00:02.000")
    assert slowest_stage([stage(0), retried, running]) == StageAttempt(
        5, 1, "count at job.py:5", 2000
    )
    assert slowest_stage([running, stage(3, "SKIPPED", start=None, end=None)]) is None


def test_without_a_task_summary_or_a_median_there_is_no_skew():
    no_tasks = summarize(APP, [], STAGES, [], None).slowest_stage
    assert no_tasks is not None and no_tasks["skew"] is None
    run_time = summarize(APP, [], STAGES, [], {"executorRunTime": [0.0, 10.0]}).slowest_stage
    assert run_time is not None and run_time["max_task_ms"] == 10.0 and run_time["skew"] is None
    empty = summarize({"id": "spark-2"}, [], [], [], None)
    assert (empty.duration_ms, empty.stages, empty.slowest_stage) == (0, 0, None)


def test_spark_timestamps_and_attempt_ids():
    assert spark_time_ms("1970-01-01T00:00:01.500GMT") == 1500
    assert spark_time_ms("not a time") is None and spark_time_ms(None) is None
    assert last_attempt_id(APP) is None
    assert last_attempt_id({"attempts": [{"attemptId": "1"}, {"attemptId": "2"}]}) == "2"


def test_only_a_driver_that_started_is_summarized():
    assert worth_reading({"started_at": "2026-12-02T05:00:00Z"})
    assert worth_reading({"state": "succeeded", "exit_code": 0})
    assert worth_reading({"state": "failed", "exit_code": 1})
    assert not worth_reading({"reason": "StartupTimeout", "exit_code": None})


def test_the_table_is_a_few_labelled_lines():
    text = table(summarize(APP, JOBS, STAGES, EXECUTORS, {"duration": [200.0, 3100.0]}))
    lines = text.splitlines()
    assert lines[0] == "Run summary of spark-1 (Spark's REST API):"
    assert "  duration              41.2 s" in lines
    assert "  jobs                  2 (1 failed)" in lines
    assert "  shuffle read / write  2.0 KiB / 2.0 KiB" in lines
    assert "  slowest stage         1.0 'count at job.py:1' 4.5 s" in lines
    assert "    task max / median   3.1 s / 0.2 s (skew 15.5x)" in lines
    assert len(lines) == 12
