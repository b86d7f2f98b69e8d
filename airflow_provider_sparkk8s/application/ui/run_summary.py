"""The run summary (docs/spark_ui.md): Spark's REST API JSON of one application in, its
numbers out, and the short table the task log shows. Pure: the service
(services/ui/history_server.py) reads the JSON; the operator logs and pushes the result.

The sources, as Spark's REST API (3.5 and 4.x alike) names them:
- `/applications/{id}`: the last attempt's `duration` (ms);
- `/applications/{id}/jobs`: each job's `status` (SUCCEEDED, FAILED, RUNNING, UNKNOWN);
- `/applications/{id}/stages`: one entry per stage *attempt*, with its `status` (COMPLETE,
  FAILED, SKIPPED, ACTIVE, PENDING), task counts and summed task metrics (`inputBytes`,
  `outputBytes`, `shuffleReadBytes`, `shuffleWriteBytes`, `memoryBytesSpilled`,
  `diskBytesSpilled`, `jvmGcTime`), which are summed here over every attempt;
- `/applications/{id}/allexecutors`: the executors (the driver's entry aside);
- `/applications/{id}/stages/{stage}/{attempt}/taskSummary?quantiles=0.5,1.0`: the
  slowest stage's median and longest task (Spark counts successful tasks only).

The slowest stage is the attempt with the longest wall time (first task launched to
completion); its skew is its longest task over its median one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from airflow_provider_sparkk8s.records import record

XCOM_KEY = "run_summary"
TASK_QUANTILES = "0.5,1.0"
# Summed over the stage attempts: XCom field -> the REST API's stage field.
_STAGE_SUMS = {
    "input_bytes": "inputBytes",
    "output_bytes": "outputBytes",
    "shuffle_read_bytes": "shuffleReadBytes",
    "shuffle_write_bytes": "shuffleWriteBytes",
    "memory_spilled_bytes": "memoryBytesSpilled",
    "disk_spilled_bytes": "diskBytesSpilled",
    "gc_time_ms": "jvmGcTime",
}


@record
class StageAttempt:
    stage_id: int
    attempt_id: int
    name: str
    wall_ms: int


@record
class RunSummary:
    application_id: str
    duration_ms: int
    jobs: int
    failed_jobs: int
    stages: int  # stage attempts that ran (not skipped)
    failed_stages: int
    skipped_stages: int
    tasks: int  # completed tasks
    failed_tasks: int
    killed_tasks: int
    executors: int
    input_bytes: int
    output_bytes: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    memory_spilled_bytes: int
    disk_spilled_bytes: int
    gc_time_ms: int
    slowest_stage: dict[str, Any] | None  # stage_id, attempt_id, name, wall_ms, tasks' ms, skew

    def to_xcom(self) -> dict[str, Any]:
        return asdict(self)


def worth_reading(event: Mapping[str, Any]) -> bool:
    """Whether the driver ran at all (its container ended with an exit code, or it was
    running): one that never started (a startup or queue timeout) left no event log."""
    return event.get("exit_code") is not None or bool(event.get("started_at"))


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def spark_time_ms(text: Any) -> int | None:
    """Spark's REST timestamps (`2026-12-02T05:31:00.123GMT`) as epoch milliseconds."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.removesuffix("GMT") + "+00:00")
    except ValueError:
        return None
    return round(moment.timestamp() * 1000)


def last_attempt_id(application: Mapping[str, Any]) -> str | None:
    """The attempt id the per-attempt paths need (None: Kubernetes' single attempt)."""
    attempts = application.get("attempts") or []
    if not attempts:
        return None
    value = attempts[-1].get("attemptId")
    return str(value) if value not in (None, "") else None


def _wall_ms(stage: Mapping[str, Any]) -> int | None:
    start = spark_time_ms(stage.get("firstTaskLaunchedTime") or stage.get("submissionTime"))
    end = spark_time_ms(stage.get("completionTime"))
    return None if start is None or end is None else max(0, end - start)


def slowest_stage(stages: Sequence[Mapping[str, Any]]) -> StageAttempt | None:
    """The finished stage attempt with the longest wall time (the first such on a tie)."""
    best: StageAttempt | None = None
    for stage in stages:
        wall = _wall_ms(stage)
        if wall is None or stage.get("status") not in ("COMPLETE", "FAILED"):
            continue
        if best is None or wall > best.wall_ms:
            best = StageAttempt(
                _int(stage.get("stageId")),
                _int(stage.get("attemptId")),
                str(stage.get("name") or ""),
                wall,
            )
    return best


def _quantiles(task_summary: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """(median, max) task time in ms from a taskSummary at quantiles 0.5 and 1.0: its
    `duration` (Spark 3.5 and 4.x), else `executorRunTime`."""
    if not task_summary:
        return None
    for field in ("duration", "executorRunTime"):
        values = task_summary.get(field)
        if isinstance(values, list) and len(values) == 2:
            return float(values[0]), float(values[1])
    return None


def _slowest(
    stage: StageAttempt | None, task_summary: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    if stage is None:
        return None
    found = _quantiles(task_summary)
    median, longest = found or (None, None)
    skew = round(longest / median, 2) if median and longest is not None else None
    return {
        **asdict(stage),
        "median_task_ms": median,
        "max_task_ms": longest,
        "skew": skew,
    }


def summarize(
    application: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    executors: Sequence[Mapping[str, Any]],
    task_summary: Mapping[str, Any] | None,
) -> RunSummary:
    """The numbers of one application (`task_summary`: the slowest stage's, or None)."""
    attempts = application.get("attempts") or [{}]
    ran = [s for s in stages if s.get("status") != "SKIPPED"]
    sums = {name: sum(_int(s.get(field)) for s in ran) for name, field in _STAGE_SUMS.items()}
    return RunSummary(
        application_id=str(application.get("id") or ""),
        duration_ms=_int(attempts[-1].get("duration")),
        jobs=len(jobs),
        failed_jobs=sum(1 for j in jobs if j.get("status") == "FAILED"),
        stages=len(ran),
        failed_stages=sum(1 for s in ran if s.get("status") == "FAILED"),
        skipped_stages=len(stages) - len(ran),
        tasks=sum(_int(s.get("numCompleteTasks")) for s in ran),
        failed_tasks=sum(_int(s.get("numFailedTasks")) for s in ran),
        killed_tasks=sum(_int(s.get("numKilledTasks")) for s in ran),
        executors=sum(1 for e in executors if e.get("id") != "driver"),
        slowest_stage=_slowest(slowest_stage(stages), task_summary),
        **sums,
    )


def _bytes(value: int) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{value} B"  # not reached


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def table(summary: RunSummary) -> str:
    """The task log's few lines: a table, not a dump."""
    s = summary
    rows = [
        ("duration", _seconds(s.duration_ms)),
        ("jobs", f"{s.jobs} ({s.failed_jobs} failed)"),
        ("stages", f"{s.stages} ({s.failed_stages} failed, {s.skipped_stages} skipped)"),
        ("tasks", f"{s.tasks} ({s.failed_tasks} failed, {s.killed_tasks} killed)"),
        ("executors", str(s.executors)),
        ("input / output", f"{_bytes(s.input_bytes)} / {_bytes(s.output_bytes)}"),
        ("shuffle read / write",
         f"{_bytes(s.shuffle_read_bytes)} / {_bytes(s.shuffle_write_bytes)}"),
        ("spill memory / disk",
         f"{_bytes(s.memory_spilled_bytes)} / {_bytes(s.disk_spilled_bytes)}"),
        ("GC time", _seconds(s.gc_time_ms)),
    ]  # fmt: skip
    stage = s.slowest_stage
    if stage:
        name = f"{stage['stage_id']}.{stage['attempt_id']} {stage['name'][:40]!r}"
        rows.append(("slowest stage", f"{name} {_seconds(stage['wall_ms'])}"))
        if stage["skew"] is not None:
            tasks = f"{_seconds(stage['max_task_ms'])} / {_seconds(stage['median_task_ms'])}"
            rows.append(("  task max / median", f"{tasks} (skew {stage['skew']}x)"))
    width = max(len(name) for name, _ in rows)
    lines = [f"Run summary of {s.application_id} (Spark's REST API):"]
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    return "\n".join(lines)
