"""testenv/airflow_db.py with a stand-in `airflow` command that records each migration (the
real one runs in every Airflow stack of `make test`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from testenv.airflow_db import migrate

# Writes a one-table SQLite database where the environment points, and counts its runs.
STAND_IN = """#!/usr/bin/env python3
import os, sqlite3, sys
assert sys.argv[1:] == ["db", "migrate"], sys.argv
url = os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
with open(os.environ["RUNS"], "a") as runs:
    runs.write(url + "\\n")
if url.startswith("sqlite:///"):
    db = sqlite3.connect(url[len("sqlite:///"):])
    db.execute("create table alembic_version (version_num text)")
    db.execute("insert into alembic_version values ('head')")
    db.commit()
"""


@pytest.fixture
def airflow_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib/python3.11/site-packages/apache_airflow-3.3.2.dist-info").mkdir(parents=True)
    command = venv / "bin" / "airflow"
    command.write_text(STAND_IN)
    command.chmod(0o755)
    monkeypatch.setenv("SPARKK8S_AIRFLOW_DB_CACHE", str(tmp_path / "cache"))
    return command


def environment(tmp_path: Path, url: str) -> dict[str, str]:
    return {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url, "RUNS": str(tmp_path / "runs")}


def test_sqlite_homes_get_copies_of_one_migration(airflow_bin: Path, tmp_path: Path) -> None:
    homes = [tmp_path / "a" / "airflow.db", tmp_path / "b" / "airflow.db"]
    for db in homes:
        migrate(airflow_bin, environment(tmp_path, f"sqlite:///{db}"))
    runs = (tmp_path / "runs").read_text().splitlines()
    assert len(runs) == 1 and all(str(db) not in runs[0] for db in homes)  # in the cache
    for db in homes:
        version = sqlite3.connect(db).execute("select * from alembic_version").fetchall()
        assert version == [("head",)]


def test_another_install_migrates_its_own(airflow_bin: Path, tmp_path: Path) -> None:
    migrate(airflow_bin, environment(tmp_path, f"sqlite:///{tmp_path / 'a.db'}"))
    (
        airflow_bin.parent.parent / "lib/python3.11/site-packages/apache_airflow-3.3.2.dist-info"
    ).rename(
        airflow_bin.parent.parent / "lib/python3.11/site-packages/apache_airflow-3.4.0.dist-info"
    )
    migrate(airflow_bin, environment(tmp_path, f"sqlite:///{tmp_path / 'b.db'}"))
    assert len((tmp_path / "runs").read_text().splitlines()) == 2


def test_any_other_database_is_migrated_each_time(airflow_bin: Path, tmp_path: Path) -> None:
    url = "postgresql+psycopg2://airflow@127.0.0.1:5432/airflow"
    migrate(airflow_bin, environment(tmp_path, url))
    migrate(airflow_bin, environment(tmp_path, url))
    assert (tmp_path / "runs").read_text().splitlines() == [url, url]
