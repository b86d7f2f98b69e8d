"""Monte Carlo estimate of Pi on Spark: the application `make demo` runs.

    pi.py [partitions] [samples per partition] [seconds each partition holds its executor]

Each partition throws its samples at the unit square with its own seeded generator and counts
the hits inside the quarter circle; the driver adds them up. It prints the estimate and the
executors (pod host names) that computed the partitions, so the log shows where it ran.

The tests that need an application to run for a while (to be cleared, killed or timed out
under it) hold each partition's executor by sleeping rather than by computing more samples:
a busy executor took CPU that the rest of the suite needed on a 2-core machine.
"""

from __future__ import annotations

import random
import socket
import sys
import time
from collections.abc import Iterator

from pyspark import SparkContext


def count_hits(
    index: int, _rows: Iterator[int], samples: int, hold_seconds: float
) -> Iterator[tuple[str, int]]:
    time.sleep(hold_seconds)
    rng = random.Random(index)
    hits = sum(1 for _ in range(samples) if rng.random() ** 2 + rng.random() ** 2 <= 1.0)
    yield socket.gethostname(), hits


def main(argv: list[str]) -> int:
    partitions = int(argv[1]) if len(argv) > 1 else 4
    samples = int(argv[2]) if len(argv) > 2 else 200_000
    hold_seconds = float(argv[3]) if len(argv) > 3 else 0.0
    sc = SparkContext.getOrCreate()
    try:
        results = (
            sc.parallelize(range(partitions), partitions)
            .mapPartitionsWithIndex(
                lambda index, rows: count_hits(index, rows, samples, hold_seconds)
            )
            .collect()
        )
    finally:
        sc.stop()
    hits = sum(count for _, count in results)
    hosts = sorted({host for host, _ in results})
    total = partitions * samples
    print(f"Pi is roughly {4.0 * hits / total:.6f}")
    print(f"{total} samples in {partitions} partitions, computed on {', '.join(hosts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
