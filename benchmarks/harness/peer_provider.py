"""The peers' Airflow provider (cncf-kubernetes: KubernetesPodOperator and its trigger),
beside the venv rather than in it: installed once with pip --target into ~/.cache, without
its pins (it wants an older kubernetes client than the tests use), and put on the path of
the processes that run the peer only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PACKAGES = ("apache-airflow-providers-cncf-kubernetes", "kubernetes_asyncio", "aiofiles")


def peer_site() -> Path:
    """The folder holding the peer's provider, installed on first use."""
    site = Path.home() / ".cache/sparkk8s-bench/cncf-kubernetes"
    if not (site / "airflow/providers/cncf/kubernetes").is_dir():
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
        subprocess.run([*pip, str(site), *PACKAGES], check=True)
    return site


def with_peer_on_path(pythonpath: str | None) -> str:
    """A PYTHONPATH value that adds the peer's folder to `pythonpath`."""
    return os.pathsep.join(part for part in (pythonpath, str(peer_site())) if part)
