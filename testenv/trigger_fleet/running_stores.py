"""The snapshot stores running during a test, seen by wrapping `SnapshotStore.start` and
`stop`: the store keeps no list of itself for tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from airflow_provider_sparkk8s.services.following.store import SnapshotStore


@contextlib.contextmanager
def running_stores() -> Iterator[list[SnapshotStore]]:
    """The stores started and not yet stopped, kept up to date while the block runs."""
    running: list[SnapshotStore] = []
    start, stop = SnapshotStore.start, SnapshotStore.stop

    # Named `self` like the methods they replace, so the signatures match.
    def started(self: SnapshotStore) -> None:
        running.append(self)
        start(self)

    async def stopped(self: SnapshotStore) -> None:
        try:
            await stop(self)
        finally:
            if self in running:
                running.remove(self)

    SnapshotStore.start = started  # type: ignore[method-assign]
    SnapshotStore.stop = stopped  # type: ignore[method-assign]
    try:
        yield running
    finally:
        SnapshotStore.start, SnapshotStore.stop = start, stop  # type: ignore[method-assign]
