"""A Spark application that fails on purpose, for the failure tests.

    fail.py [message]

It runs one small job on the executors, then raises `RuntimeError(message)` in the driver:
the driver exits 1 and the traceback's last line is the exception.
"""

from __future__ import annotations

import sys

from pyspark import SparkContext


def main(argv: list[str]) -> int:
    message = argv[1] if len(argv) > 1 else "failing on purpose"
    sc = SparkContext.getOrCreate()
    counted = sc.parallelize(range(10), 2).count()
    print(f"counted {counted} rows on the executors; now failing")
    raise RuntimeError(message)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
