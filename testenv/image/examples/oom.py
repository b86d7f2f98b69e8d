"""A Spark application whose driver holds memory, for the out-of-memory tests.

    oom.py <MiB>

Starts its SparkContext, then allocates and writes <MiB> MiB in the driver's Python
program, then counts on the executors and exits 0. Under a container memory limit smaller
than that plus the JVM, the kernel's OOM killer ends it (the container's memory cgroup
enforces the limit and the kubelet reports the container OOMKilled).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from pyspark import SparkContext

    mebibytes = int(argv[1]) if len(argv) > 1 else 1024
    sc = SparkContext.getOrCreate()
    held = [b"x" * (1 << 20) for _ in range(mebibytes)]  # written, so really resident
    counted = sc.parallelize(range(10), 2).count()
    print(f"held {len(held)} MiB in the driver; counted {counted} rows on the executors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
