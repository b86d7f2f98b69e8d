"""CPU and memory of a whole process group: an Airflow component started in a session of
its own (testenv/airflow_stack.py), with the workers and runners it forks, and their
descendants that left the group (Airflow 3.3's supervisor puts each task process in a group
of its own: `new_process_group=True` in `ActivitySubprocess.start`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class GroupCpu:
    leader: float  # the component's own process
    others: float  # what it forked: live members, and the children they have reaped


def members(pgid: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid:
                found.append(process)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def tree(pgid: int) -> list[psutil.Process]:
    """The group's members and all their descendants, whatever group these are in: one read
    of the process table."""
    children: dict[int, list[psutil.Process]] = {}
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter(["ppid"]):
        try:
            if os.getpgid(process.pid) == pgid:
                found[process.pid] = process
        except (ProcessLookupError, psutil.Error):
            continue
        children.setdefault(process.info["ppid"], []).append(process)
    pending = list(found)
    while pending:
        for child in children.get(pending.pop(), []):
            if child.pid not in found:
                found[child.pid] = child
                pending.append(child.pid)
    return list(found.values())


def group_cpu(pgid: int) -> GroupCpu:
    """User + system seconds. A member's reaped children count in its own figure, so a task
    process that ran and exited under the LocalExecutor's worker is not lost; one still
    running, in a group of its own, counts through `tree`."""
    leader = others = 0.0
    for process in tree(pgid):
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        own = times.user + times.system
        reaped = times.children_user + times.children_system
        if process.pid == pgid:
            leader += own
            others += reaped
        else:
            others += own + reaped
    return GroupCpu(leader, others)


def group_pss_kib(pgid: int) -> int:
    """Proportional set size summed over the group: shared pages split, not counted twice."""
    total = 0
    for process in tree(pgid):
        try:
            total += process.memory_full_info().pss // 1024
        except psutil.Error:
            continue
    return total


def rollup_kib(text: str) -> tuple[int, int]:
    """Rss and Pss, KiB, from a /proc/PID/smaps_rollup text."""
    found = {"Rss:": 0, "Pss:": 0}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in found:
            found[parts[0]] = int(parts[1])
    return found["Rss:"], found["Pss:"]


def groups_rss_pss_kib(pgids: tuple[int, ...]) -> tuple[int, int]:
    """RSS and PSS summed over the groups' trees, from smaps_rollup (cheap enough to sample
    each second, where psutil's memory_full_info reads the whole smaps)."""
    rss = pss = 0
    for pgid in pgids:
        for process in tree(pgid):
            try:
                with open(f"/proc/{process.pid}/smaps_rollup") as rollup:
                    more_rss, more_pss = rollup_kib(rollup.read())
            except OSError:  # it ended meanwhile
                continue
            rss += more_rss
            pss += more_pss
    return rss, pss
