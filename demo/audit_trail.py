"""Who created and who deleted each object the demo shows, as kube-apiserver's audit log
records it (testenv/controlplane.py's `audit_log`): the user each request came as, and the
client's user agent, which names the controller (the garbage collector) of a controller
manager that uses one identity for all of them. Nothing is guessed: an object whose request
is not in the log is shown without a name.

What counts: a create, or a server-side apply that created (201); for a delete, the first
request that asked for it after the object was made, by its name or by a delete-collection
whose label selector takes it (Spark's driver deletes its executors so). A pod's last
delete, by its kubelet once the containers stopped, only ends what someone else asked for.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

GARBAGE_COLLECTOR_AGENT = "/generic-garbage-collector"
# A request's line comes when its response is complete, which may be just after the watch
# event that shows the object: wait this long for it.
WAIT_SECONDS = 3.0


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def actor(event: dict[str, Any], known: dict[str, str]) -> str:
    """Who asked for `event`'s request: a name from `known` (user name -> who), the garbage
    collector by its user agent, else the user name as kube-apiserver authenticated it."""
    agent = str(event.get("userAgent") or "")
    if agent.endswith(GARBAGE_COLLECTOR_AGENT):
        return "the garbage collector"
    user = str((event.get("user") or {}).get("username") or "an unknown user")
    return known.get(user, user)


def selector_takes(selector: str, labels: dict[str, str]) -> bool:
    """Whether an equality-based label selector (`a=b,c!=d,e,!f`) selects `labels`; a set-based
    term (`in`, `notin`) is not read, and selects nothing here rather than guess."""
    for term in filter(None, (part.strip() for part in selector.split(","))):
        if " " in term or "(" in term:
            return False
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _selector(event: dict[str, Any]) -> str:
    query = parse_qs(urlsplit(str(event.get("requestURI") or "")).query)
    return (query.get("labelSelector") or [""])[0]


def _succeeded(event: dict[str, Any]) -> int:
    """The response code of a whole request on the object itself, else 0."""
    if event.get("stage") != "ResponseComplete" or (event.get("objectRef") or {}).get(
        "subresource"
    ):
        return 0
    code = int((event.get("responseStatus") or {}).get("code", 0))
    return code if 200 <= code < 300 else 0


def _made(event: dict[str, Any]) -> bool:
    verb, code = event.get("verb"), _succeeded(event)
    return bool(code) and (verb == "create" or (verb == "patch" and code == 201))


class AuditTrail:
    """Reads the audit log as it grows and answers who created or deleted an object."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self._events: list[dict[str, Any]] = []  # the successful requests, in the log's order
        self._lock = threading.Lock()

    def created(
        self, resource: str, namespace: str, name: str, wait: float = WAIT_SECONDS
    ) -> dict[str, Any] | None:
        """The request that made the object; None if its line never comes."""
        return self._first(lambda: self._made_at(resource, namespace, name)[1], wait)

    def deleted(
        self,
        resource: str,
        namespace: str,
        name: str,
        labels: dict[str, str],
        wait: float = WAIT_SECONDS,
    ) -> dict[str, Any] | None:
        """The first request that asked to delete the object after it was made."""

        def find() -> dict[str, Any] | None:
            start = self._made_at(resource, namespace, name)[0]
            for event in self._events[start:]:
                ref = event.get("objectRef") or {}
                if (ref.get("resource"), ref.get("namespace")) != (resource, namespace):
                    continue
                if event.get("verb") == "delete" and ref.get("name") == name:
                    return event
                if event.get("verb") == "deletecollection" and selector_takes(
                    _selector(event), labels
                ):
                    return event
            return None

        return self._first(find, wait)

    def _made_at(
        self, resource: str, namespace: str, name: str
    ) -> tuple[int, dict[str, Any] | None]:
        """(index after the object's last making, that request), or (0, None)."""
        for index in range(len(self._events) - 1, -1, -1):
            event = self._events[index]
            ref = event.get("objectRef") or {}
            if _made(event) and (ref.get("resource"), ref.get("namespace"), ref.get("name")) == (
                resource, namespace, name,
            ):  # fmt: skip
                return index + 1, event
        return 0, None

    def _first(
        self, find: Callable[[], dict[str, Any] | None], wait: float
    ) -> dict[str, Any] | None:
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                self._read_new_lines()
                found = find()
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    def _read_new_lines(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as log:
            log.seek(self._offset)
            data = self._partial + log.read()
            self._offset = log.tell()
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            if line.strip():
                event = json.loads(line)
                if _succeeded(event):
                    self._events.append(event)
