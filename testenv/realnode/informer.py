"""List-then-watch, in a thread: every object of a collection as events, whatever breaks.

Three layers, as a client-go reflector: the loop reconnects after any failure (with a capped
backoff); each round lists, reports what appeared, changed or vanished since the last round,
and watches from the list's resourceVersion; a watch ends on `410 Gone`, an ERROR event or
a closed stream, and the next round lists again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from testenv.admin_client import AdminHttp

log = logging.getLogger(__name__)
Handler = Callable[[str, dict[str, Any]], None]  # ("ADDED" | "MODIFIED" | "DELETED", object)
WATCH_SECONDS = 300


class Informer:
    def __init__(
        self,
        client: AdminHttp,
        path: str,
        handler: Handler,
        params: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.handler = handler
        self.params = dict(params or {})
        self.stop = stop or threading.Event()
        self.synced = threading.Event()  # set after the first list was handled
        self.known: dict[str, dict[str, Any]] = {}  # uid -> object
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"informer {path}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def _run(self) -> None:
        delay = 0.2
        while not self.stop.is_set():
            try:
                self._round()
                delay = 0.2
            except Exception as error:  # noqa: BLE001 - an informer outlives any failure
                if self.stop.is_set():
                    return
                log.warning("list/watch %s failed (%s); again in %.1fs", self.path, error, delay)
                self.stop.wait(delay)
                delay = min(delay * 2, 5.0)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.known.values())

    def _emit(self, kind: str, obj: dict[str, Any]) -> None:
        uid = obj["metadata"]["uid"]
        with self._lock:
            if kind == "DELETED":
                self.known.pop(uid, None)
            else:
                self.known[uid] = obj
        self.handler(kind, obj)

    def _round(self) -> None:
        listed = self.client.request("GET", self.path, params=self.params)
        items = {item["metadata"]["uid"]: item for item in listed.get("items") or []}
        for obj in self.snapshot():
            if obj["metadata"]["uid"] not in items:
                self._emit("DELETED", obj)
        for uid, item in items.items():
            before = self.known.get(uid)
            if before is None:
                self._emit("ADDED", item)
            elif before["metadata"].get("resourceVersion") != item["metadata"].get(
                "resourceVersion"
            ):
                self._emit("MODIFIED", item)
        self.synced.set()
        version = listed["metadata"]["resourceVersion"]
        params = {
            **self.params,
            "resourceVersion": version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        for event in self.client.watch(self.path, params):
            if self.stop.is_set():
                return
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":  # 410 Gone and friends: list again
                return
            if kind == "BOOKMARK":
                continue
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._emit(kind, obj)
