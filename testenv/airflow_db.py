"""A migrated Airflow database for a test's Airflow home: `airflow db migrate` costs 3.5
CPU-seconds a time on SQLite (7-10 s of wall on a loaded machine), and a full `make test`
migrated a dozen fresh homes. A SQLite one is a copy of a database migrated once per Airflow
install, cached under ~/.cache/sparkk8s-airflow-db keyed by that install (its interpreter's
path and its apache-airflow release), made under a lock and renamed into place when done,
so the two lanes of `make test` share it: the Airflow stacks, the plugin tests'
api-servers and the operator tests' template home (tests/operators/airflow_harness.py) all
copy it. Any other database (PostgreSQL) is migrated."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

SQLITE = "sqlite:///"


def cache_root() -> Path:
    return Path(
        os.environ.get("SPARKK8S_AIRFLOW_DB_CACHE", Path.home() / ".cache/sparkk8s-airflow-db")
    )


def install_key(airflow_bin: Path) -> str:
    """The install: the `airflow` command's venv and the apache-airflow release in it."""
    venv = airflow_bin.resolve().parent.parent
    releases = sorted(
        p.name for p in venv.glob("lib/python*/site-packages/apache_airflow-*.dist-info")
    )
    return hashlib.sha256(f"{venv}\n{releases}".encode()).hexdigest()[:16]


def migrate(airflow_bin: Path, env: Mapping[str, str], timeout: float = 300) -> None:
    """The database `env` names, migrated: a copy of the cached one for SQLite."""
    url = env.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "")
    if not url.startswith(SQLITE):
        _run_migrate(airflow_bin, env, timeout)
        return
    target = Path(url[len(SQLITE) :])
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_template(airflow_bin, env, timeout), target)


def _template(airflow_bin: Path, env: Mapping[str, str], timeout: float) -> Path:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    cached = root / f"{install_key(airflow_bin)}.db"
    if cached.exists():
        return cached
    with open(root / f"{cached.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cached.exists():
            with tempfile.TemporaryDirectory(dir=root) as scratch:
                home = Path(scratch)
                fresh = {
                    **env,
                    "AIRFLOW_HOME": str(home),
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"{SQLITE}{home / 'airflow.db'}",
                }
                _run_migrate(airflow_bin, fresh, timeout)
                os.replace(home / "airflow.db", cached)
    return cached


def _run_migrate(airflow_bin: Path, env: Mapping[str, str], timeout: float) -> None:
    done = subprocess.run(
        [str(airflow_bin), "db", "migrate"],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"airflow db migrate failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
