"""Child processes of the control plane: started with their output in a log
file, remembered by pid, stopped by that pid only (SIGTERM, then SIGKILL after a
deadline)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Self

STOP_DEADLINE_SECONDS = 10.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGKILL the child when its parent dies,
    so a test session killed outright leaves no control plane behind. The
    signal follows the spawning *thread*, so it is only used from the main
    thread (whose end is the process's end)."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    prctl = libc.prctl
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return hook


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    user: str | None = None  # run as this user (PostgreSQL refuses to run as root)
    env: dict[str, str] | None = None  # added to this process's environment (e.g. its keys)
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def start(self) -> None:
        if self.running():
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - open for the process lifetime
        self._popen = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Its own session, so a Ctrl-C aimed at pytest does not kill the
            # control plane before the fixtures' own shutdown runs.
            start_new_session=True,
            preexec_fn=_die_with_parent(),  # noqa: PLW1509 - only async-signal-safe work
            user=self.user,
            env=None if self.env is None else {**os.environ, **self.env},
        )

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def stop(self, deadline_seconds: float = STOP_DEADLINE_SECONDS) -> None:
        """SIGTERM the recorded pid, SIGKILL it if it outlives the deadline."""
        popen = self._popen
        if popen is not None and popen.poll() is None:
            _signal(popen.pid, signal.SIGTERM)
            try:
                popen.wait(timeout=deadline_seconds)
            except subprocess.TimeoutExpired:
                _signal(popen.pid, signal.SIGKILL)
                popen.wait(timeout=deadline_seconds)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, max_bytes: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-max_bytes:].decode(errors="replace")

    def check_alive(self) -> None:
        """Raises with the log tail if the process has died; used inside waits
        so a crashed component fails fast instead of at the deadline."""
        if self._popen is not None and self._popen.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with code {self._popen.returncode}; "
                f"log {self.log_path}:\n{self.log_tail()}"
            )


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    watch: list[ManagedProcess] | None = None,
    interval: float = 0.05,
) -> None:
    """Polls `predicate` until it returns True; raises TimeoutError naming
    `what` after `timeout` seconds. Exceptions from the predicate count as "not
    yet" (the server may not be listening). Dead processes in `watch` fail fast."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        for process in watch or []:
            process.check_alive()
        try:
            if predicate():
                return
        except Exception as error:  # noqa: BLE001 - any failure means "not ready yet"
            last_error = error
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)


def built_by(script: Path, env_var: str) -> Path:
    """$env_var when it is set, else the last line `script` prints: the path of what it
    built, or found already built, under ~/.cache (its progress goes to stderr)."""
    configured = os.environ.get(env_var)
    if configured:
        return Path(configured)
    return script_output(script)


def script_output(script: Path, *args: str) -> Path:
    """The last line `script args...` prints: a build or fetch script's cached result."""
    completed = subprocess.run([str(script), *args], check=True, stdout=subprocess.PIPE, text=True)
    return Path(completed.stdout.strip().splitlines()[-1])


class Server:
    """A test server used as `with X() as x:`: `start` returns it, `stop` ends it by pid."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()  # a start that failed half-way: what it started, and its folder, go
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
