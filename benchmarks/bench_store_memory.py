"""Where a tracked application's memory goes: N SparkK8sApplicationTriggers on one shared
store, in one process, over an in-memory API that answers with kubelet-shaped pod JSON.

No control plane, so it runs in seconds and isolates the triggerer's own memory: the list
body goes through the sender's `decode_json` (pod by pod through `slim_pod`, as against
kube-apiserver), and watch events are decoded from JSON lines. It prints, per tracked
application:

- the settled RSS growth (after gc + malloc_trim) once every trigger has seen its driver,
  and after further full lists (a relist must not leave memory behind);
- the CPU of one whole list against one resync, which lists versions only
  (PartialObjectMetadataList, here with nothing changed, so nothing is fetched);
- tracemalloc's live Python objects by component: the store's slim pods (snapshot +
  decoding), the store's indexes and subscriptions, the triggers (object, coroutine
  frames, last state), and this harness's task per trigger (what the triggerer's own
  task per trigger costs).

    python -m benchmarks.bench_store_memory [--apps 2000] [--executors 0] [--resyncs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import json
import logging
import multiprocessing
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from airflow_provider_sparkk8s.kube.decoding import ItemView, decode_json
from airflow_provider_sparkk8s.kube.request import build_request

TIME = "2026-01-01T00:00:00Z"
COMPONENTS = (
    ("store: slim pods", ("monitoring/snapshot.py", "kube/decoding.py")),
    ("store: indexes, subscriptions", ("services/following/store.py",)),
    ("triggers: objects, frames, last state", ("triggers/", "monitoring/reducer.py")),
    ("harness: one task per trigger", ("bench_store_memory.py",)),
)


def kubelet_pod(name: str, app: str, role: str, index: int) -> dict[str, Any]:
    """A Running pod as kube-apiserver returns it for a real kubelet (about 4 KB of JSON)."""
    container = "spark-kubernetes-driver" if role == "driver" else "spark-kubernetes-executor"
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": TIME}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    ] + [{"type": "PodScheduled", "status": "True", "lastProbeTime": None}]
    return {
        "metadata": {
            "name": name,
            "namespace": "spark",
            "uid": str(uuid.uuid4()),
            "resourceVersion": str(1000 + index),
            "creationTimestamp": TIME,
            "labels": {"spark-app-selector": app, "spark-role": role, "spark-version": "4.0.1"},
            "annotations": {"sparkk8s.io/submitted-by": "bench"},
            "managedFields": [
                {
                    "manager": manager,
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": TIME,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:spark-role": {}}}},
                }
                for manager in ("python-httpx", "kubelet")
            ],
        },
        "spec": {
            "volumes": [{"name": "spark-local-dir-1", "emptyDir": {}}],
            "containers": [
                {
                    "name": container,
                    "image": "apache/spark:4.0.1",
                    "args": [role, "--properties-file", "/opt/spark/conf/spark.properties"],
                    "env": [{"name": f"SPARK_ENV_{i}", "value": f"value-{i}"} for i in range(8)],
                    "resources": {"limits": {"memory": "1408Mi"}, "requests": {"cpu": "1"}},
                    "volumeMounts": [{"name": "spark-local-dir-1", "mountPath": "/var/data"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Never",
            "nodeName": f"node-{index % 50}",
            "serviceAccountName": "spark",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": "10.0.0.1",
            "podIP": f"10.1.{index // 250}.{index % 250}",
            "startTime": TIME,
            "containerStatuses": [
                {
                    "name": container,
                    "state": {"running": {"startedAt": TIME}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "apache/spark:4.0.1",
                    "imageID": "docker-pullable://apache/spark@sha256:" + "0" * 64,
                    "containerID": "containerd://" + uuid.uuid4().hex * 2,
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }


def list_bodies(apps: int, executors: int) -> tuple[bytes, bytes]:
    """The list's JSON, whole and as a PartialObjectMetadataList, built in another process:
    built here, the freed pod dicts would leave room that the triggers then fill without
    growing the RSS being measured."""
    pods: list[dict[str, Any]] = []
    for i in range(apps):
        app = f"spark-{i:032d}"
        pods.append(kubelet_pod(f"app-{i}-driver", app, "driver", len(pods)))
        for e in range(executors):
            pods.append(kubelet_pod(f"app-{i}-exec-{e + 1}", app, "executor", len(pods)))
    body = {"kind": "PodList", "metadata": {"resourceVersion": "99999"}, "items": pods}
    whole = json.dumps(body).encode()
    body["kind"] = "PartialObjectMetadataList"
    body["items"] = [
        {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": p["metadata"],
        }
        for p in pods
    ]
    return whole, json.dumps(body).encode()


class JsonApi:
    """Lists as JSON bytes, decoded the way `AsyncKubeClient` decodes them; a quiet watch."""

    def __init__(self, body: bytes, metadata_body: bytes):
        self.body = body
        self.metadata_body = metadata_body

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        each_item: ItemView | None = None,
        accept: str | None = None,
    ) -> dict[str, Any]:
        await asyncio.sleep(0)
        metadata_only = "PartialObjectMetadataList" in (accept or "")
        body = self.metadata_body if metadata_only else self.body
        return decode_json(build_request(method, path), body, each_item)

    async def watch(
        self, path: str, params: Mapping[str, Any] | None = None, *, read_timeout: Any = None
    ) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()  # a quiet stream: no changes while memory is measured
        yield {}

    async def text(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        return ""

    async def aclose(self) -> None:
        return None


def settled_rss_kib() -> int:
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def component_of(filename: str) -> str:
    for name, parts in COMPONENTS:
        if any(part in filename for part in parts):
            return name
    return "other (Airflow, asyncio)"


def by_component(after: tracemalloc.Snapshot, before: tracemalloc.Snapshot) -> Counter[str]:
    """Live bytes grown, each allocation charged to the innermost frame of ours (else its
    own frame), grouped into components."""
    sizes: Counter[str] = Counter()
    for stat in after.compare_to(before, "traceback"):
        frames = [frame.filename for frame in stat.traceback]
        ours = [f for f in frames if "airflow_provider_sparkk8s" in f or "benchmarks" in f]
        sizes[component_of((ours or frames)[-1])] += stat.size_diff
    return sizes


async def measure(apps: int, executors: int, resyncs: int, trace: bool) -> dict[str, Any]:
    from airflow_provider_sparkk8s.kube.watch_async import list_objects
    from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
    from testenv.trigger_fleet.running_stores import running_stores

    drivers = [(f"spark-{i:032d}", f"app-{i}-driver") for i in range(apps)]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        api = JsonApi(*pool.submit(list_bodies, apps, executors).result())

    async def client(self: Any) -> JsonApi:
        return api

    SparkK8sApplicationTrigger._client = client  # type: ignore[method-assign]

    def triggers(which: list[tuple[str, str]]) -> list[SparkK8sApplicationTrigger]:
        return [
            SparkK8sApplicationTrigger(
                application_id=app,
                namespace="spark",
                kubernetes_conn_id="bench",
                driver_pod_name=name,
                stream_logs=False,
                resync_interval=3600,
            )
            for app, name in which
        ]

    triggers(drivers[:1])  # imports and first-use caches are not per-app memory
    if trace:
        tracemalloc.start(30)
    before_snapshot = tracemalloc.take_snapshot() if trace else None
    rss_before = settled_rss_kib()
    followed = triggers(drivers)

    async def follow(trigger: SparkK8sApplicationTrigger) -> None:
        async for _ in trigger.run():
            return

    with running_stores() as running:
        tasks = [asyncio.create_task(follow(t)) for t in followed]
        while not all(t.last_state is not None for t in followed):  # noqa: ASYNC110 - polling
            await asyncio.sleep(0.05)
        rss_tracked = settled_rss_kib()
        after_snapshot = tracemalloc.take_snapshot() if trace else None
        [store] = running  # the one store every trigger shares
        rss_resyncs, list_cpu, resync_cpu = [], [], []
        for _ in range(resyncs):
            # Nothing else runs: the triggers wait, the watch is quiet.
            started = time.process_time()
            store._take_list(await list_objects(store.client, store._spec, store.stats))
            list_cpu.append(time.process_time() - started)
            rss_resyncs.append(settled_rss_kib())
            started = time.process_time()
            await store._resync()
            resync_cpu.append(time.process_time() - started)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    components = (
        by_component(after_snapshot, before_snapshot)
        if after_snapshot is not None and before_snapshot is not None
        else Counter()
    )
    return {
        "tracked": (rss_tracked - rss_before) / apps,
        "resyncs": [(r - rss_before) / apps for r in rss_resyncs],
        "components": {k: v / apps for k, v in components.items()},
        "list_bytes": len(api.body) / (apps * (1 + executors)),
        "list_cpu": min(list_cpu, default=float("nan")),
        "resync_cpu": min(resync_cpu, default=float("nan")),
        "metadata_bytes": len(api.metadata_body) / (apps * (1 + executors)),
        "pods": apps * (1 + executors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, default=2000)
    parser.add_argument("--executors", type=int, default=0)
    parser.add_argument("--resyncs", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rss = asyncio.run(measure(args.apps, args.executors, args.resyncs, trace=False))
    objects = asyncio.run(measure(args.apps, args.executors, 0, trace=True))
    print(
        f"{args.apps} applications, {args.executors} executor pods each; pod JSON "
        f"{rss['list_bytes']:.0f} B each\n"
    )
    print("| per tracked application | KiB |\n| --- | ---: |")
    print(f"| RSS growth, all tracked | {rss['tracked']:.2f} |")
    for index, value in enumerate(rss["resyncs"]):
        print(f"| RSS growth after full list {index + 1} | {value:.2f} |")
    for name, size in sorted(objects["components"].items(), key=lambda kv: -kv[1]):
        print(f"| Python objects: {name} | {size / 1024:.2f} |")
    print(f"| Python objects: total | {sum(objects['components'].values()) / 1024:.2f} |")
    print(
        f"\nCPU of one full list (decode, slim, merge; fastest of {args.resyncs}): "
        f"{1000 * rss['list_cpu']:.0f} ms, {1e6 * rss['list_cpu'] / rss['pods']:.0f} us per pod"
    )
    print(
        f"CPU of one resync (versions only, {rss['metadata_bytes']:.0f} B per pod, nothing "
        f"changed; fastest of {args.resyncs}): {1000 * rss['resync_cpu']:.0f} ms, "
        f"{1e6 * rss['resync_cpu'] / rss['pods']:.0f} us per pod: "
        f"{rss['resync_cpu'] / rss['list_cpu']:.2f} of a whole list"
    )


if __name__ == "__main__":
    main()
