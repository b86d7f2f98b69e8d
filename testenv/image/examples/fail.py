"""A Spark application that fails on purpose, for the failure tests.

    fail.py [message] [--after-job]

It raises `RuntimeError(message)` in the driver's Python program, so the driver exits 1 and
the traceback's last line is the exception. With `--after-job` it first runs a small job on
the executors; without, it fails before it asks for any.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    words = [a for a in argv[1:] if a != "--after-job"]
    message = words[0] if words else "failing on purpose"
    if "--after-job" in argv:
        from pyspark import SparkContext

        sc = SparkContext.getOrCreate()
        counted = sc.parallelize(range(10), 2).count()
        print(f"counted {counted} rows on the executors; now failing")
    raise RuntimeError(message)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
