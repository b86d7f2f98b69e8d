"""Heavy fault runs: `make chaos` sets SPARKK8S_CHAOS=1; `make test` skips them (CI's time)."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("SPARKK8S_CHAOS"):
        return
    skip = pytest.mark.skip(reason="a chaos run: `make chaos` runs it (SPARKK8S_CHAOS=1)")
    for item in items:
        if "tests/chaos/" in str(item.fspath):
            item.add_marker(skip)
