"""One memory cgroup (v1) per container, where the machine offers a writable one: the
container's memory limit is enforced as a kubelet would, an OOM kill is told apart from
other SIGKILLs, and every process the container left behind is found and killed.

Without a writable v1 memory hierarchy the runtime runs containers without one (no limit,
no `OOMKilled`, stragglers found by process group only) and says so in its log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


def agent_cgroup_parent(node_name: str, agent_pid: int, root: Path = MEMORY_ROOT) -> Path:
    """The folder holding one agent's container cgroups: every agent's node is called
    `process-node-0`, so its pid tells one session's containers from another's."""
    return root / "sparkk8s" / f"{node_name}-{agent_pid}"


def memory_cgroups_available(root: Path = MEMORY_ROOT) -> bool:
    return (root / "memory.limit_in_bytes").exists() and os.access(root, os.W_OK)


class MemoryCgroup:
    def __init__(self, path: Path):
        self.path = path

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def create(self, limit_bytes: int | None) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        if limit_bytes:
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.procs_file.read_text().split()]
        except OSError:
            return []

    def peak_bytes(self) -> int | None:
        try:
            return int((self.path / "memory.max_usage_in_bytes").read_text())
        except (OSError, ValueError):
            return None

    def oom_killed(self) -> bool:
        """The kernel's `oom_kill` counter of this cgroup (Linux 4.13+)."""
        try:
            for line in (self.path / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value) > 0
        except (OSError, ValueError):
            pass
        return False

    def kill_all(self, deadline_seconds: float = 5.0) -> None:
        """SIGKILL every process still in the cgroup, until none is left or the deadline."""
        deadline = time.monotonic() + deadline_seconds
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def remove(self) -> None:
        self.kill_all()
        for _ in range(50):  # rmdir fails while the kernel is still reaping the last task
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)
