"""Where the control-plane binaries are: $SPARKK8S_TESTENV_BIN, or whatever
testenv/build.sh builds (or finds already built) under ~/.cache."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

BINARY_NAMES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
BUILD_SCRIPT = Path(__file__).resolve().parent / "build.sh"


def missing_binaries(directory: Path) -> list[str]:
    return [name for name in BINARY_NAMES if not os.access(directory / name, os.X_OK)]


def find_binaries() -> Path:
    """Returns the directory holding all five binaries, building them if needed."""
    configured = os.environ.get("SPARKK8S_TESTENV_BIN")
    if configured:
        directory = Path(configured)
        source = "SPARKK8S_TESTENV_BIN"
    else:
        # build.sh prints the directory as its last line; progress goes to stderr.
        completed = subprocess.run(
            [str(BUILD_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True
        )
        directory = Path(completed.stdout.strip().splitlines()[-1])
        source = str(BUILD_SCRIPT)
    missing = missing_binaries(directory)
    if missing:
        raise FileNotFoundError(
            f"{source} gave {directory}, which lacks executable {', '.join(missing)}"
        )
    return directory
