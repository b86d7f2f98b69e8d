"""Who a Spark application runs as, from inside its containers: the pod-template tests.

    identity.py [PATH ...]

Starts its SparkContext (the JVM's login needs a user name for the uid), runs one task on
an executor, then prints the driver's and the executor's uid, gid and supplementary
groups, the user Spark runs as, and for each PATH (a volume) its group and mode and those
of a file the driver writes there, so the log shows what the kubelet applied.
"""

from __future__ import annotations

import os
import sys


def identity() -> str:
    groups = ",".join(str(group) for group in sorted(os.getgroups()))
    return f"uid={os.getuid()} gid={os.getgid()} groups={groups}"


def volume_line(path: str) -> str:
    probe = os.path.join(path, "written-by-driver")
    with open(probe, "w") as handle:
        handle.write("probe\n")
    folder, written = os.stat(path), os.stat(probe)
    return (
        f"volume {path}: dir gid={folder.st_gid} mode={folder.st_mode & 0o7777:o}"
        f" file uid={written.st_uid} gid={written.st_gid}"
    )


def main(argv: list[str]) -> int:
    from pyspark import SparkContext

    sc = SparkContext.getOrCreate()
    try:
        user = sc.sparkUser()
        on_executor = sc.parallelize(range(1), 1).map(lambda _: identity()).collect()
    finally:
        sc.stop()
    print(f"driver identity: {identity()} spark-user={user}", flush=True)
    for line in on_executor:
        print(f"executor identity: {line}", flush=True)
    for path in argv[1:]:
        print(volume_line(path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
