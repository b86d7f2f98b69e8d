"""What every process of a run cost the machine, by command: Linux's process accounting
(acct(2), version 3 records), so the short-lived ones count too (a JVM of a driver pod, an
Airflow task process), which sampling /proc misses. Needs root (CAP_SYS_PACCT).

    python -m testenv.process_cpu on FILE     # every process that ends from now on
    python -m testenv.process_cpu off
    python -m testenv.process_cpu report FILE # CPU seconds by command, largest first

A record is written when a process ends, under the name of its last thread: a JVM shows as
one of its threads ("Reference Handl", "C1 CompilerThre"), so the report folds those
into "java". Used for docs/testing.md's "Where the CPU goes"; not part of any test run.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime,
# etime (float), then comp_t utime, stime, mem, io, rw, minflt, majflt, swaps, and comm[16].
RECORD = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")
TICKS_PER_SECOND = 100  # AHZ: comp_t times count in these
JAVA_THREAD_PREFIXES = ("GC Thread", "G1 ", "C1 ", "C2 ", "VM ", "rpc-", "shuffle-")


@dataclass(frozen=True)
class Ended:
    command: str
    pid: int
    cpu_seconds: float  # user + system


def comp_t(value: int) -> int:
    """A comp_t: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 0x7))


def records(data: bytes) -> list[Ended]:
    ended = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(data, offset)
        if fields[1] != 3:
            raise ValueError(f"not a version 3 accounting record at byte {offset}")
        command = fields[18].rstrip(b"\0").decode(errors="replace")
        cpu = (comp_t(fields[10]) + comp_t(fields[11])) / TICKS_PER_SECOND
        ended.append(Ended(command, fields[6], cpu))
    return ended


def family(command: str) -> str:
    """The command a record counts under: a JVM's thread names fold into "java", every
    Airflow process title ("airflow worker -- LocalExecutor", ...) into "airflow"."""
    if command.startswith("airflow"):
        return "airflow"
    if command == "java" or command.startswith(JAVA_THREAD_PREFIXES):
        return "java"
    if " " in command or command[:1].isupper():
        return "java"  # "Reference Handl", "Finalizer", "Common-Cleaner", ...
    return command


def by_family(ended: Iterable[Ended]) -> list[tuple[str, float, int]]:
    seconds: dict[str, float] = {}
    count: Counter[str] = Counter()
    for record in ended:
        name = family(record.command)
        seconds[name] = seconds.get(name, 0.0) + record.cpu_seconds
        count[name] += 1
    largest = sorted(seconds.items(), key=lambda item: item[1], reverse=True)
    return [(name, total, count[name]) for name, total in largest]


def main(argv: list[str]) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if argv[:1] == ["on"] and len(argv) == 2:
        Path(argv[1]).touch()
        if libc.acct(argv[1].encode()) != 0:
            raise OSError(ctypes.get_errno(), "acct(2) refused (root with CAP_SYS_PACCT?)")
        return 0
    if argv == ["off"]:
        libc.acct(None)
        return 0
    if argv[:1] == ["report"] and len(argv) == 2:
        ended = records(Path(argv[1]).read_bytes())
        total = sum(record.cpu_seconds for record in ended)
        print(f"{total:.0f} CPU-s in {len(ended)} processes")
        for name, seconds, count in by_family(ended)[:25]:
            print(f"{seconds:9.1f} {count:6d}  {name}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
