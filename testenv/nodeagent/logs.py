"""Container logs in the CRI format (`<RFC3339Nano> <stream> <F|P> <text>`), and the
`/containerLogs` options applied to them (pure).

The runtime writes each line of a container's stdout and stderr with the time it was read;
the log server parses, filters and renders them the way a kubelet answers `pods/log`.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MAX_MESSAGE_LINES = 80  # FallbackToLogsOnError: the kubelet's last lines ...
MAX_MESSAGE_BYTES = 2048  # ... and bytes of the log


@dataclass(frozen=True)
class LogEntry:
    time: datetime.datetime
    stream: str
    text: str  # without the newline
    partial: bool = False


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    tail_lines: int | None = None
    since: datetime.datetime | None = None
    timestamps: bool = False
    limit_bytes: int | None = None


def rfc3339_nano(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def rfc3339(moment: datetime.datetime) -> str:
    """Kubernetes' whole-second timestamps (startedAt, finishedAt, ...)."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime.datetime:
    """RFC 3339 with any number of fraction digits (Python reads at most six)."""
    text = text.strip().replace("Z", "+00:00")
    if "." in text:
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:digits][:6].ljust(6, '0')}{rest[digits:]}"
    return datetime.datetime.fromisoformat(text)


def cri_line(moment: datetime.datetime, stream: str, text: str, partial: bool = False) -> str:
    return f"{rfc3339_nano(moment)} {stream} {'P' if partial else 'F'} {text}\n"


def parse_cri(lines: Iterable[str]) -> list[LogEntry]:
    entries = []
    for line in lines:
        parts = line.rstrip("\n").split(" ", 3)
        if len(parts) < 3:
            continue
        stamp, stream, tag = parts[0], parts[1], parts[2]
        text = parts[3] if len(parts) == 4 else ""
        entries.append(LogEntry(parse_time(stamp), stream, text, partial=tag == "P"))
    return entries


def _flag(query: Mapping[str, Sequence[str]], name: str) -> bool:
    values = query.get(name) or []
    return bool(values) and values[-1].lower() in ("true", "1", "")


def _positive_int(query: Mapping[str, Sequence[str]], name: str) -> int | None:
    values = query.get(name) or []
    if not values:
        return None
    try:
        number = int(values[-1])
    except ValueError as error:
        raise ValueError(f"{name}={values[-1]!r} is not an integer") from error
    if number < 0 or (number == 0 and name != "tailLines"):
        raise ValueError(f"{name}={values[-1]!r} must be greater than zero")
    return number


def options_from_query(query: Mapping[str, Sequence[str]], now: datetime.datetime) -> LogOptions:
    """The kubelet's query parameters; `sinceSeconds` becomes a time against `now`.
    Raises ValueError naming the parameter for a bad value."""
    since: datetime.datetime | None = None
    since_seconds = _positive_int(query, "sinceSeconds")
    if since_seconds is not None:
        since = now - datetime.timedelta(seconds=since_seconds)
    if query.get("sinceTime"):
        if since is not None:
            raise ValueError("at most one of sinceTime or sinceSeconds may be given")
        try:
            since = parse_time(query["sinceTime"][-1])
        except ValueError as error:
            raise ValueError(f"sinceTime={query['sinceTime'][-1]!r} is not RFC 3339") from error
    return LogOptions(
        follow=_flag(query, "follow"),
        tail_lines=_positive_int(query, "tailLines"),
        since=since,
        timestamps=_flag(query, "timestamps"),
        limit_bytes=_positive_int(query, "limitBytes"),
    )


def select(entries: Sequence[LogEntry], options: LogOptions) -> list[LogEntry]:
    """Entries at or after `since`, then the last `tail_lines` of them."""
    chosen = [e for e in entries if options.since is None or e.time >= options.since]
    if options.tail_lines is not None:
        chosen = chosen[-options.tail_lines :] if options.tail_lines else []
    return chosen


def render(entries: Iterable[LogEntry], timestamps: bool) -> bytes:
    out = []
    for entry in entries:
        prefix = f"{rfc3339_nano(entry.time)} " if timestamps else ""
        out.append(f"{prefix}{entry.text}{'' if entry.partial else chr(10)}")
    return "".join(out).encode()


def message_from_tail(entries: Sequence[LogEntry]) -> str:
    """What `terminationMessagePolicy: FallbackToLogsOnError` puts in the message: the last
    lines of the log, cut to the last bytes."""
    text = render(entries[-MAX_MESSAGE_LINES:], timestamps=False)
    return text[-MAX_MESSAGE_BYTES:].decode(errors="replace").strip("\n")
