"""The driver log polled with `sinceTime`: each line once across polls that re-read the same
second, the poll's parameters, errors that wait for the next poll, a cap per poll, and the
stream that reads the last lines once the application ends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState
from airflow_provider_sparkk8s.services.following.driver_log import (
    DriverLogFollower,
    DriverLogStream,
    LogCursor,
    take_new_lines,
)


def test_since_time_is_the_cursors_second() -> None:
    assert LogCursor().since_time() is None
    assert LogCursor("2026-01-01T00:00:01.123456789Z").since_time() == "2026-01-01T00:00:01Z"


def test_a_second_read_again_gives_only_the_lines_not_seen() -> None:
    first, cursor = take_new_lines(
        LogCursor(), "2026-01-01T00:00:01.1Z a\n2026-01-01T00:00:01.2Z b\n"
    )
    assert first == ["a", "b"] and cursor.timestamp == "2026-01-01T00:00:01.2Z"
    again, cursor = take_new_lines(
        cursor, "2026-01-01T00:00:01.1Z a\n2026-01-01T00:00:01.2Z b\n2026-01-01T00:00:01.25Z c\n"
    )
    assert again == ["c"]


def test_fractions_compare_as_nanoseconds_and_untimed_lines_keep_their_place() -> None:
    lines, cursor = take_new_lines(
        LogCursor("2026-01-01T00:00:01.5Z"),
        "2026-01-01T00:00:01.45Z old\n2026-01-01T00:00:01.500000001Z new\ncontinued\n",
    )
    assert lines == ["new", "continued"]
    assert cursor.timestamp == "2026-01-01T00:00:01.500000001Z"


class ScriptedLog:
    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.asked: list[Mapping[str, Any]] = []

    async def __call__(self, params: Mapping[str, Any]) -> str:
        self.asked.append(dict(params))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_a_poll_asks_with_timestamps_and_since_time_and_emits_new_lines() -> None:
    fetch = ScriptedLog(
        "2026-01-01T00:00:01.1Z a\n", "2026-01-01T00:00:01.1Z a\n2026-01-01T00:00:02Z b\n"
    )
    emitted: list[str] = []
    follower = DriverLogFollower(fetch, emitted.append, "spark-kubernetes-driver")
    assert await follower.poll() == 1
    assert await follower.poll() == 1
    assert emitted == ["a", "b"]
    assert fetch.asked == [
        {"container": "spark-kubernetes-driver", "timestamps": "true"},
        {
            "container": "spark-kubernetes-driver",
            "timestamps": "true",
            "sinceTime": "2026-01-01T00:00:01Z",
        },
    ]


async def test_an_unavailable_log_waits_for_the_next_poll() -> None:
    fetch = ScriptedLog(KubeApiError(400, "BadRequest", "container is waiting"), OSError("reset"))
    emitted: list[str] = []
    follower = DriverLogFollower(fetch, emitted.append, "c")
    assert await follower.poll() == 0 and await follower.poll() == 0
    assert emitted == [] and follower.cursor == LogCursor()


async def test_lines_beyond_the_cap_are_counted_not_shown() -> None:
    text = "".join(f"2026-01-01T00:00:0{i}Z line{i}\n" for i in range(5))
    emitted: list[str] = []
    follower = DriverLogFollower(ScriptedLog(text), emitted.append, "c", max_lines_per_poll=2)
    assert await follower.poll() == 2
    assert emitted == ["line0", "line1", "... 3 more driver log lines not shown"]


async def test_the_stream_reads_the_last_lines_at_the_end_and_none_without_a_driver() -> None:
    emitted: list[str] = []
    made: list[str] = []

    def follower_for(pod: str) -> DriverLogFollower:
        made.append(pod)
        return DriverLogFollower(ScriptedLog("2026-01-01T00:00:09Z done\n"), emitted.append, "c")

    stream = DriverLogStream(follower_for, interval=60.0)
    await stream.finish(ApplicationState(state="unknown", driver_pod="pi-driver"))
    assert made == [] and emitted == []
    await stream.finish(ApplicationState(state="succeeded", driver_pod="pi-driver"))
    assert made == ["pi-driver"] and emitted == ["done"]
