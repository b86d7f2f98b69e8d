"""Spark's event log per application, where the platform keeps it (docs/spark_ui.md): the
History Server reads that folder after the driver ends. Pure: the operator passes its
parameters, the connection's extras and `[sparkk8s]`; this decides the conf.

The operator's parameter wins over the connection's extra, which wins over `[sparkk8s]`;
and the user's own `spark.eventLog.*` keys win over all of them, key by key
(`spark.eventLog.enabled=false` turns the log off whatever the platform says). The CLI
adds nothing: it builds what spark-submit builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf_values import parse_size

# The operator's parameters, the connection's extras and the `[sparkk8s]` options: one name.
DIR_OPTION = "event_log_dir"
ROLLING_OPTION = "event_log_rolling_max_file_size"

ENABLED_KEY = "spark.eventLog.enabled"
DIR_KEY = "spark.eventLog.dir"
ROLLING_ENABLED_KEY = "spark.eventLog.rolling.enabled"
ROLLING_SIZE_KEY = "spark.eventLog.rolling.maxFileSize"
# Spark refuses a smaller rolling file (EVENT_LOG_ROLLING_MAX_FILE_SIZE's check), at the
# driver's start: refused here before anything is sent.
_MIN_ROLLING_BYTES = 10 * 1024 * 1024
_DIR_ACCEPTED = "an absolute path or a URI (file:/shared/spark-events, s3a://bucket/spark-events)"


@record
class EventLogChoice:
    """Where the platform wants this task's event log (None: no log), and whether it rolls
    (Spark's rolling event log: files of at most `rolling_max_file_size`)."""

    dir: str | None = None
    rolling_max_file_size: str | None = None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _first(sources: tuple[Mapping[str, Any], ...], option: str) -> str | None:
    return next((_text(s.get(option)) for s in sources if _text(s.get(option))), None)


def choose(
    dir_parameter: str | None,
    rolling_parameter: str | None,
    connection_extras: Mapping[str, Any],
    config: Mapping[str, Any],
) -> EventLogChoice:
    """The first source that names a folder gives it, the first that names a size gives
    that (a platform's size applies to a task's own folder). Checked here: a bad value fails
    before any request."""
    sources = ({DIR_OPTION: dir_parameter, ROLLING_OPTION: rolling_parameter},
               connection_extras, config)  # fmt: skip
    folder = _first(sources, DIR_OPTION)
    if folder is None:
        return EventLogChoice()
    size = _first(sources, ROLLING_OPTION)
    _check_dir(folder)
    if size is not None:
        _check_size(size)
    return EventLogChoice(folder, size)


def _check_dir(folder: str) -> None:
    # Spark resolves a relative path against the driver's working folder: never the
    # platform's. A scheme (file:, s3a:, gs:, abfss:, hdfs:) or an absolute path is fine.
    scheme = folder.split(":", 1)[0] if ":" in folder else ""
    if not (folder.startswith("/") or (scheme and "/" in folder and scheme.isidentifier())):
        raise SparkConfError(DIR_OPTION, folder, _DIR_ACCEPTED)


def _check_size(size: str) -> None:
    if parse_size(ROLLING_OPTION, size, "b") < _MIN_ROLLING_BYTES:
        raise SparkConfError(ROLLING_OPTION, size, "a size of at least 10m", "Spark's minimum")


def _is_false(value: Any) -> bool:
    return str(value).strip().lower() == "false"


def with_event_log(conf: Mapping[str, Any], choice: EventLogChoice) -> dict[str, Any]:
    """`conf` with the event log keys the choice asks for; the user's own keys stay."""
    merged = dict(conf)
    if choice.dir is None or _is_false(conf.get(ENABLED_KEY, "true")):
        return merged
    merged.setdefault(ENABLED_KEY, "true")
    merged.setdefault(DIR_KEY, choice.dir)
    if choice.rolling_max_file_size is not None and not _is_false(
        conf.get(ROLLING_ENABLED_KEY, "true")
    ):
        merged.setdefault(ROLLING_ENABLED_KEY, "true")
        merged.setdefault(ROLLING_SIZE_KEY, choice.rolling_max_file_size)
    return merged


def enabled(conf: Mapping[str, Any]) -> bool:
    """Whether a submission of `conf` writes an event log (Spark's default: no)."""
    return str(conf.get(ENABLED_KEY, "false")).strip().lower() == "true"
