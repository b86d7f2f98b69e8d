"""What the secure preset costs (docs/secure_preset.md): the same PySpark Pi with and without
`"preset": "secure"`, on the real node: `python -m benchmarks.bench_secure_preset`.

One plane and real node (testenv/realnode), one namespace with docs/rbac.yaml, the submitter's
identity. Pi (`pi.py 4 200000`, 2 executors of 512m, 200m cores a pod, Spark 4.3.0) through
sparkk8s-submit: first one run without the preset that is not counted (the image's first
use), then `--pairs` pairs, the order alternating (without, with; with, without; ...), so a
drift of the machine's load falls on both. The preset comes as the CLI's `--policy FILE`.
For each run: the driver pod Running, the first executor registered with the driver (the
driver log's own timestamps), the CLI's exit on success, each in seconds since the
submission, and the peak resident memory of the node's pods (memory cgroups, every 0.2 s).
The load average is printed before and after. Nothing is asserted: the medians go into
docs/platform.md ("The secure preset") by hand, with the date and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_real_node import NAMESPACE, real_node_plane, spark_pi
from testenv.spark_plane import open_namespace

FIGURES = (
    "driver Running (s)",
    "first executor registered (s)",
    "succeeded, CLI exit (s)",
    "peak RSS of the pods (MiB)",
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_secure_preset")
    parser.add_argument("--pairs", type=int, default=2, help="runs with and without (2)")
    arguments = parser.parse_args()
    print(f"load before: {os.getloadavg()}", flush=True)
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    with real_node_plane() as (plane, rss), tempfile.TemporaryDirectory() as tmp:
        kubeconfig = open_namespace(plane, NAMESPACE, Path(tmp) / "kubeconfig")
        policy = Path(tmp) / "policy.json"
        policy.write_text(json.dumps({"preset": "secure"}))

        def run(secure: bool, label: str) -> dict[str, Any]:
            options = ("--policy", str(policy)) if secure else ()
            figures = spark_pi(plane, kubeconfig, rss, options)
            shown = ", ".join(f"{k} {v:.2f}" for k, v in figures.items() if k in FIGURES)
            side = "with" if secure else "without"
            load = os.getloadavg()
            code = figures["exit code"]
            print(f"{label} ({side}): exit {code}, {shown}, load {load}", flush=True)
            assert figures["exit code"] == 0, figures
            return figures

        run(False, "warm-up, not counted")
        for pair in range(arguments.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for secure in order:
                runs[secure].append(run(secure, f"pair {pair + 1}"))
    print(f"load after: {os.getloadavg()}", flush=True)
    print("\nmedians: without / with the preset (ratio)")
    for key in FIGURES:
        without = statistics.median(r[key] for r in runs[False])
        with_preset = statistics.median(r[key] for r in runs[True])
        print(f"  {key:<32} {without:8.2f} {with_preset:8.2f}  ({with_preset / without:.2f}x)")


if __name__ == "__main__":
    main()
