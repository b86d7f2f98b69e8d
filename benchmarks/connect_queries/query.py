"""One of benchmarks/bench_connect.py's ten small queries: the same function runs as a
submitted application's main (this file, `query.py <index>`) and through a Connect client.

Query `index` sums `id % (index + 3)` over `100,000 * (index + 1)` rows in 2 partitions, so
each has its own answer, checked against `expected(index)`.
"""

from __future__ import annotations

import sys
from typing import Any

ROWS = 100_000


def query(spark: Any, index: int) -> int:
    rows, modulus = ROWS * (index + 1), index + 3
    frame = spark.range(0, rows, 1, 2).selectExpr(f"sum(id % {modulus}) AS total")
    return int(frame.collect()[0]["total"])


def expected(index: int) -> int:
    rows, modulus = ROWS * (index + 1), index + 3
    cycles, rest = divmod(rows, modulus)
    return cycles * modulus * (modulus - 1) // 2 + rest * (rest - 1) // 2


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    session = SparkSession.builder.getOrCreate()
    index = int(sys.argv[1])
    try:
        print(f"QUERY {index} RESULT {query(session, index)}", flush=True)
    finally:
        session.stop()
