"""What the Spark UI through Airflow adds per page: the same live driver's pages asked three
ways, side by side in one run, on the real node (testenv/realnode) with a real Airflow:

- direct: from the node's network namespace to the driver pod's address, port 4040;
- kube-apiserver's pod proxy alone (the admin's client certificate);
- through Airflow: the api-server's plugin (auth, the XCom read, the pod proxy with the
  task's connection, the link rewrite), as the browser asks it (the `_token` cookie).

The driver is a DAG's SparkK8sSubmitOperator (testenv/spark_ui_live.py: Spark Pi
4.3.0, held with its job RUNNING). Each round asks every page every way, in rotating order,
over kept connections; medians are printed as a Markdown table with the load.

    python -m benchmarks.bench_spark_ui [--rounds 30]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from kubernetes import config as k8s_config

from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.realnode.netns import inside
from testenv.realnode.node import RealNode
from testenv.spark_ui_live import launch_ui_stack, live_spark_ui

NAMESPACE = "bench-spark-ui"
WAYS = ("direct", "kube-apiserver proxy", "through Airflow")


def pages(application_id: str) -> dict[str, str]:
    return {
        "Jobs page (HTML)": "/jobs/",
        "static file (webui.css)": "/static/webui.css",
        "REST /api/v1/applications": "/api/v1/applications",
        "REST executors": f"/api/v1/applications/{application_id}/executors",
    }


def timed(get: Callable[[str], tuple[int, int]], path: str) -> float:
    started = time.perf_counter()
    status, _size = get(path)
    took = time.perf_counter() - started
    if status != 200:
        raise RuntimeError(f"{path}: {status}")
    return took


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="bench-spark-ui-"))
    stack = launch_ui_stack(root)
    node = RealNode()
    plane = ControlPlane(node_count=0, cluster_egress_socket=node.paths.egress_socket)
    try:
        plane.start()
        node.start(plane)
        admin = k8s_config.new_client_from_config(config_file=str(plane.admin_kubeconfig))
        kube.request(admin, "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        accounts = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts"
        wait_for(lambda: kube.request(admin, "GET", accounts)["items"], 60, "default account")
        with live_spark_ui(stack, plane, admin, NAMESPACE, root) as run:
            driver = run.driver_pod()
            ip = driver["status"]["podIP"]
            target = SparkUiTarget("", NAMESPACE, driver["metadata"]["name"], 4040)
            direct = http.client.HTTPConnection(ip, 4040, timeout=60)

            def get_direct(path: str) -> tuple[int, int]:
                # The node's pod network is reachable only from its namespace; a socket
                # made there stays there.
                with inside(node.netns_path):
                    direct.request("GET", path)
                    answer = direct.getresponse()
                    return answer.status, len(answer.read())

            with (
                kube.session(admin) as proxy,
                httpx.Client(
                    base_url=stack.base_url, cookies={"_token": run.token}, timeout=60
                ) as airflow,
            ):

                def get_proxy(path: str) -> tuple[int, int]:
                    answer = proxy.get(target.upstream_prefix + path)
                    return answer.status_code, len(answer.content)

                def get_airflow(path: str) -> tuple[int, int]:
                    answer = airflow.get(run.base + path)
                    return answer.status_code, len(answer.content)

                ways = dict(zip(WAYS, (get_direct, get_proxy, get_airflow), strict=True))
                listed = pages(run.application_id())
                for path in listed.values():  # warm every connection and page once
                    for get in ways.values():
                        timed(get, path)
                samples: dict[tuple[str, str], list[float]] = {}
                for index in range(args.rounds):
                    order = WAYS[index % 3 :] + WAYS[: index % 3]
                    for page, path in listed.items():
                        for way in order:
                            samples.setdefault((page, way), []).append(timed(ways[way], path))
            direct.close()
            admin.close()
        load_after = os.getloadavg()
    finally:
        stack.stop()
        node.stop()
        plane.stop()
    medians = {key: statistics.median(values) * 1000 for key, values in samples.items()}
    print(
        f"| per page (median of {args.rounds}, ms) | "
        + " | ".join(WAYS)
        + " | added by Airflow | ratio to direct |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for page in listed:
        row = [medians[(page, way)] for way in WAYS]
        added = row[2] - row[0]
        print(
            f"| {page} | "
            + " | ".join(f"{v:.1f}" for v in row)
            + f" | {added:.1f} | {row[2] / row[0]:.1f}x |"
        )
    print(
        f"\nload average {', '.join(f'{v:.1f}' for v in load_before)} before, "
        f"{', '.join(f'{v:.1f}' for v in load_after)} after; {os.cpu_count()} CPUs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
