"""An in-memory stand-in for AsyncKubeClient's list and watch, for the store's unit tests.

It keeps pods with increasing resourceVersions, serves lists, and feeds each open watch
from a queue; tests can end streams, answer 410 Gone, fail requests or make watches hang.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError


class FakeKube:
    def __init__(self) -> None:
        self.rv = 100
        self.pods: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, dict]] = []
        self.watch_params: list[dict] = []
        self.read_timeouts: list[float | None] = []
        self.streams: list[asyncio.Queue] = []
        self.fail_requests = False
        self.fail_watches = False
        self.gone_below: int | None = None  # watches from an older version get 410
        self.hang_watches = False  # a silently dead connection: no events, never ends
        self.closed = False

    # ---------------------------------------------------------------- test controls

    def put(self, pod: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
        self.rv += 1
        pod = copy.deepcopy(pod)
        pod["metadata"]["resourceVersion"] = str(self.rv)
        name = pod["metadata"]["name"]
        kind = kind or ("MODIFIED" if name in self.pods else "ADDED")
        self.pods[name] = pod
        self._broadcast({"type": kind, "object": pod})
        return pod

    def delete(self, name: str) -> None:
        self.rv += 1
        pod = self.pods.pop(name)
        pod = copy.deepcopy(pod)
        pod["metadata"]["resourceVersion"] = str(self.rv)
        self._broadcast({"type": "DELETED", "object": pod})

    def put_silently(self, pod: dict[str, Any]) -> None:
        """A change the watch never delivers (as if the event was lost)."""
        self.rv += 1
        pod = copy.deepcopy(pod)
        pod["metadata"]["resourceVersion"] = str(self.rv)
        self.pods[pod["metadata"]["name"]] = pod

    def end_streams(self, event: dict | None = None) -> None:
        for queue in self.streams:
            if event is not None:
                queue.put_nowait(event)
            queue.put_nowait(None)
        self.streams = []

    def _broadcast(self, event: dict) -> None:
        for queue in self.streams:
            queue.put_nowait(copy.deepcopy(event))

    def list_count(self) -> int:
        return sum(
            1 for method, _, params in self.requests if method == "GET" and "watch" not in params
        )

    # ---------------------------------------------------------------- the client face

    async def request(
        self, method: str, path: str, *, params: dict | None = None, **_: Any
    ) -> dict:
        self.requests.append((method, path, dict(params or {})))
        await asyncio.sleep(0)
        if self.fail_requests:
            raise KubeConnectionError("cannot reach the API server (fake)")
        if method == "DELETE":
            name = path.rsplit("/", 1)[-1]
            if name not in self.pods:
                raise KubeApiError(
                    404, "NotFound", f"pods {name!r} not found", method=method, path=path
                )
            self.delete(name)
            return {}
        if not path.endswith("/pods"):  # one pod
            name = path.rsplit("/", 1)[-1]
            if name not in self.pods:
                raise KubeApiError(404, "NotFound", f"pods {name!r} not found", method=method)
            return copy.deepcopy(self.pods[name])
        each_item = _.get("each_item") or (lambda pod: pod)  # as the sender: a view of each
        metadata_only = "PartialObjectMetadataList" in (_.get("accept") or "")
        return {
            "metadata": {"resourceVersion": str(self.rv)},
            "items": [
                each_item(copy.deepcopy({"metadata": p["metadata"]} if metadata_only else p))
                for p in self.pods.values()
            ],
        }

    async def watch(self, path: str, params: dict | None = None, *, read_timeout=None):
        params = dict(params or {})
        self.watch_params.append(params)
        self.read_timeouts.append(read_timeout)
        if self.fail_watches:
            raise KubeConnectionError("cannot reach the API server (fake)")
        since = int(params.get("resourceVersion") or 0)
        if self.gone_below is not None and since < self.gone_below:
            yield {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "code": 410,
                    "reason": "Expired",
                    "message": "too old resource version",
                },
            }
            return
        if self.hang_watches:
            await asyncio.Event().wait()
        queue: asyncio.Queue = asyncio.Queue()
        self.streams.append(queue)
        while True:
            try:  # as the real sender: a stream silent past its read timeout just ends
                async with asyncio.timeout(read_timeout):
                    event = await queue.get()
            except TimeoutError:
                return
            if event is None:
                return
            yield event

    async def aclose(self) -> None:
        self.closed = True


class FakeKubeWithLogs(FakeKube):
    """Also serves `pods/<name>/log?timestamps=true&sinceTime=...` from `self.logs`."""

    def __init__(self) -> None:
        super().__init__()
        self.logs: dict[str, list[str]] = {}  # pod name -> "timestamp line" entries
        self.log_params: list[dict] = []

    async def text(self, path: str, params: dict | None = None) -> str:
        params = dict(params or {})
        self.log_params.append(params)
        await asyncio.sleep(0)
        name = path.split("/pods/")[1].split("/")[0]
        since = params.get("sinceTime")
        lines = [
            entry for entry in self.logs.get(name, []) if since is None or entry[:19] >= since[:19]
        ]
        return "".join(f"{line}\n" for line in lines)
