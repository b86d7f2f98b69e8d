"""A throw-away PostgreSQL server on loopback: Airflow's metadata database when two
triggerers share the triggers (SQLite cannot carry two), as in production.

    with Postgres() as pg:
        print(pg.sqlalchemy_url)

Debian's server binaries (`testenv/install_postgres.sh` installs the package when missing);
a fresh cluster in a temp dir, trust authentication on 127.0.0.1 only, no fsync (the data
is thrown away), stopped by its pid. As root the server runs as the `postgres` user, since
PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from testenv.controlplane import free_port
from testenv.processes import ManagedProcess, Server, wait_until

INSTALL_SCRIPT = Path(__file__).resolve().parent / "install_postgres.sh"
SUPERUSER = "airflow"


def server_bin_dir() -> Path:
    completed = subprocess.run([str(INSTALL_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True)
    return Path(completed.stdout.strip().splitlines()[-1])


class Postgres(Server):
    def __init__(
        self, bin_dir: Path | None = None, settings: Mapping[str, str] | None = None
    ) -> None:
        self.bin_dir = bin_dir or server_bin_dir()
        # More `-c name=value` for the server (a benchmark preloads pg_stat_statements).
        self.settings = dict(settings or {})
        self.workdir = Path(tempfile.mkdtemp(prefix="sparkk8s-postgres-"))
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        self._process: ManagedProcess | None = None

    @property
    def sqlalchemy_url(self) -> str:
        return f"postgresql+psycopg2://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> Self:
        data, sockets = self.workdir / "data", self.workdir / "sockets"
        sockets.mkdir()
        if self.user is not None:
            account = pwd.getpwnam(self.user)
            for path in (self.workdir, sockets):
                os.chown(path, account.pw_uid, account.pw_gid)
        initdb = [str(self.bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER]
        subprocess.run(
            [*initdb, "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            stdout=subprocess.DEVNULL,
            user=self.user,
        )
        self._process = ManagedProcess(
            "postgres",
            [
                *(str(self.bin_dir / "postgres"), "-D", str(data), "-h", "127.0.0.1"),
                *("-p", str(self.port), "-k", str(sockets)),
                *("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"),
                *("-c", "max_connections=200"),
                *(arg for item in self.settings.items() for arg in ("-c", "=".join(item))),
            ],
            self.workdir / "postgres.log",
            user=self.user,
        )
        self._process.start()
        wait_until(self._accepting, 60, "PostgreSQL to accept connections", [self._process])
        return self

    def _accepting(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            pass
        done = subprocess.run(
            [str(self.bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        return done.returncode == 0

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
