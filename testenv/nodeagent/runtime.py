"""The part of the agent that runs containers: pod directories, volumes on disk, and each
container as a process in its own mount namespace (`sandbox.py`), with its stdout and
stderr captured in the CRI log format.

Layout under the agent's state directory, one directory per pod (removed with the pod):

    pods/<uid>/volumes/<volume>/...        what `volumes.plan_volumes` said, written once
    pods/<uid>/hosts                       the pod's /etc/hosts, rewritten in place
    pods/<uid>/containers/<name>/log       CRI log of the container
    pods/<uid>/containers/<name>/termination-log
    pods/<uid>/containers/<name>/sandbox/  tmpfs mount point, inside the namespace only
    pods/<uid>/containers/<name>/run.sh    the sandbox script
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime
import logging
import os
import queue
import secrets
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from testenv.nodeagent.cgroups import (
    MemoryCgroup,
    agent_cgroup_parent,
    memory_cgroups_available,
)
from testenv.nodeagent.images import Image
from testenv.nodeagent.logs import cri_line, parse_cri
from testenv.nodeagent.quantity import ceil_units
from testenv.nodeagent.sandbox import Bind, SandboxPlan, Tools, sandbox_script
from testenv.nodeagent.status import exit_code
from testenv.nodeagent.volumes import Mount, VolumePlan

log = logging.getLogger(__name__)
MAX_LINE = 16 * 1024  # longer lines are logged in partial (P) pieces, as CRI runtimes do
_PR_SET_PDEATHSIG = 1


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Spawner:
    """Starts every container process from one long-lived thread, so each can ask Linux to
    SIGKILL it when that thread (the agent) dies: a killed agent leaves no pod behind."""

    def __init__(self) -> None:
        self._requests: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="spawner", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (item := self._requests.get()) is not None:
            work, future = item
            try:
                future.set_result(work())
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                future.set_exception(error)

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)

        def die_with_agent() -> None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

        future: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put(
            (lambda: subprocess.Popen(argv, preexec_fn=die_with_agent, **kwargs), future)  # noqa: PLW1509
        )
        return future.result()

    def close(self) -> None:
        self._requests.put(None)


@dataclass
class PodDirs:
    root: Path

    @property
    def volumes(self) -> Path:
        return self.root / "volumes"

    @property
    def hosts(self) -> Path:
        return self.root / "hosts"

    def container(self, name: str) -> Path:
        return self.root / "containers" / name

    def log_file(self, container: str) -> Path:
        return self.container(container) / "log"


@dataclass
class ContainerProcess:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    termination_file: Path
    started_at: datetime.datetime
    cgroup: MemoryCgroup | None
    readers: list[threading.Thread] = field(default_factory=list)
    finished_at: datetime.datetime | None = None
    cleaned: bool = False
    started: threading.Event = field(default_factory=threading.Event)  # its command runs

    def mark_started(self) -> None:
        self.started_at = _now()
        self.started.set()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exit_status(self) -> int | None:
        """The container's exit code once it ended and its output is all in the log."""
        returncode = self.popen.poll()
        if returncode is None:
            return None
        for reader in self.readers:
            reader.join(timeout=5)
        if self.finished_at is None:
            self.finished_at = _now()
        return exit_code(returncode)

    def oom_killed(self) -> bool:
        return self.cgroup is not None and self.cgroup.oom_killed()

    def termination_text(self) -> str:
        try:
            return self.termination_file.read_text(errors="replace")[:4096]
        except OSError:
            return ""

    def log_entries(self) -> list[Any]:
        try:
            return parse_cri(self.log_path.read_text(errors="replace").splitlines())
        except OSError:
            return []


def _copy_output(
    stream: IO[bytes],
    name: str,
    sink: IO[str],
    lock: threading.Lock,
    marker: tuple[bytes, Callable[[], None]] | None = None,
) -> None:
    """One of the container's streams into its CRI log, line by line, as it comes. On
    stdout, the sandbox's start marker (its first line, never logged) marks the start."""
    with stream:
        if marker is not None:
            first = stream.readline(MAX_LINE)
            if first == marker[0]:
                marker[1]()
            elif first:
                with lock:
                    sink.write(
                        cri_line(_now(), name, first.rstrip(b"\n").decode("utf-8", "replace"))
                    )
                    sink.flush()
        while chunk := stream.readline(MAX_LINE):
            partial = not chunk.endswith(b"\n")
            text = chunk.rstrip(b"\n").decode("utf-8", "replace")
            with lock:
                sink.write(cri_line(_now(), name, text, partial))
                sink.flush()


def memory_limit(container: Mapping[str, Any]) -> int | None:
    value = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return ceil_units(value) if value else None


class ProcessRuntime:
    def __init__(self, state_dir: Path, node_name: str, tools: Tools | None = None) -> None:
        self.state_dir = state_dir
        self.tools = tools or _host_tools()
        self.spawner = Spawner()
        self.unshare = shutil.which("unshare") or "/usr/bin/unshare"
        self.cgroup_parent: Path | None = None
        if memory_cgroups_available():
            self.cgroup_parent = agent_cgroup_parent(node_name, os.getpid())
        else:
            log.warning("no writable memory cgroup: no memory limits, no OOMKilled detection")

    # -- pods --

    def pod_dirs(self, uid: str) -> PodDirs:
        return PodDirs(self.state_dir / "pods" / uid)

    def prepare_pod(self, uid: str, volumes: list[VolumePlan], hosts_text: str) -> PodDirs:
        """Writes the pod's volumes and hosts file (again, whole, on each call)."""
        dirs = self.pod_dirs(uid)
        for plan in volumes:
            target = dirs.volumes / plan.name
            if plan.kind == "host":
                continue
            if target.exists() and plan.kind == "files":
                shutil.rmtree(target)
            target.mkdir(parents=True, exist_ok=True)
            for item in plan.files:
                path = target / item.path
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(item.data)
                path.chmod(item.mode)
        self.write_hosts(dirs, hosts_text)
        return dirs

    def write_hosts(self, dirs: PodDirs, text: str) -> bool:
        """Rewrites the hosts file in place (its inode is bind-mounted); True if it changed."""
        dirs.root.mkdir(parents=True, exist_ok=True)
        if dirs.hosts.exists() and dirs.hosts.read_text() == text:
            return False
        with dirs.hosts.open("w") as handle:  # "w" truncates the same inode
            handle.write(text)
        return True

    def remove_pod(self, uid: str) -> None:
        shutil.rmtree(self.pod_dirs(uid).root, ignore_errors=True)

    # -- containers --

    def start_container(
        self,
        dirs: PodDirs,
        container: Mapping[str, Any],
        image: Image,
        env: Mapping[str, str],
        argv: list[str],
        hostname: str,
        mounts: list[Mount],
        volumes: Mapping[str, VolumePlan],
    ) -> ContainerProcess:
        name = container["name"]
        here = dirs.container(name)
        if here.exists():
            shutil.rmtree(here)
        sandbox = here / "sandbox"
        sandbox.mkdir(parents=True)
        termination = here / "termination-log"
        termination.touch()
        cgroup = None
        if self.cgroup_parent is not None:
            cgroup = MemoryCgroup(self.cgroup_parent / f"{dirs.root.name}-{name}")
            cgroup.create(memory_limit(container))
        binds = [self._bind(dirs, m, volumes) for m in mounts]
        binds.append(Bind(str(dirs.hosts), "/etc/hosts", is_file=True))
        message_path = container.get("terminationMessagePath") or "/dev/termination-log"
        binds.append(Bind(str(termination), message_path, is_file=True))
        marker = f"sparkk8s-started-{secrets.token_hex(8)}"
        plan = SandboxPlan(
            sandbox_dir=str(sandbox),
            started_marker=marker,
            hostname=hostname[:63],
            working_dir=container.get("workingDir") or image.working_dir,
            argv=tuple(argv),
            image_layers=_image_layers(image),
            binds=tuple(binds),
            cgroup_procs=str(cgroup.procs_file) if cgroup else None,
        )
        script = here / "run.sh"
        script.write_text(sandbox_script(plan, self.tools))
        log_path = here / "log"
        sink = log_path.open("a")
        popen = self.spawner.popen(
            [self.unshare, "--mount", "--uts", "--propagation", "private", "/bin/sh", str(script)],
            env=dict(env),
            cwd=str(here),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        process = ContainerProcess(name, popen, log_path, termination, _now(), cgroup)
        lock = threading.Lock()
        started = (f"{marker}\n".encode(), process.mark_started)
        for stream, label, first in (
            (popen.stdout, "stdout", started),
            (popen.stderr, "stderr", None),
        ):
            assert stream is not None
            reader = threading.Thread(
                target=_copy_output, args=(stream, label, sink, lock, first), daemon=True
            )
            reader.start()
            process.readers.append(reader)
        threading.Thread(target=_close_when_done, args=(process, sink), daemon=True).start()
        return process

    def _bind(self, dirs: PodDirs, mount: Mount, volumes: Mapping[str, VolumePlan]) -> Bind:
        volume = volumes[mount.volume]
        base = Path(volume.host_path) if volume.host_path else dirs.volumes / volume.name
        source = base / mount.sub_path if mount.sub_path else base
        if mount.sub_path and not source.exists():
            source.mkdir(parents=True)  # a kubelet creates a missing subPath as a directory
        return Bind(str(source), mount.target, mount.read_only, is_file=source.is_file())

    def signal(self, process: ContainerProcess, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signum)

    def kill(self, process: ContainerProcess) -> None:
        """SIGKILL the container and everything it started (its cgroup, else its group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.cgroup is not None:
            process.cgroup.kill_all()

    def cleanup(self, process: ContainerProcess) -> None:
        """Right after the container's main process ended (once): nothing of it may keep
        running. Later, its process group id may belong to someone else."""
        if process.cleaned:
            return
        process.cleaned = True
        self.kill(process)
        if process.cgroup is not None:
            peak = process.cgroup.peak_bytes()
            if peak:
                log.info("container %s: peak memory %.0f MiB", process.name, peak / 2**20)
            process.cgroup.remove()

    def close(self) -> None:
        self.spawner.close()
        if self.cgroup_parent is not None:
            for child in self.cgroup_parent.glob("*/"):
                MemoryCgroup(child).remove()
            MemoryCgroup(self.cgroup_parent).remove()


def _close_when_done(process: ContainerProcess, sink: IO[str]) -> None:
    process.popen.wait()
    for reader in process.readers:
        reader.join()
    sink.close()


def _image_layers(image: Image) -> tuple[tuple[str, str], ...]:
    if not image.tree:
        return ()
    tree = Path(image.tree)
    return tuple(
        (str(child), "/" + child.name) for child in sorted(tree.iterdir()) if child.is_dir()
    )


def _host_tools() -> Tools:
    def which(name: str, default: str) -> str:
        return shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin") or default

    defaults = Tools()
    return Tools(
        **{name: which(name, getattr(defaults, name)) for name in defaults.__dataclass_fields__}
    )
