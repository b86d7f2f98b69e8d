"""Normalise a recorded submission so two submissions of the same scenario compare equal.

Only what is random per submission is rewritten: the application id, uniqueID suffixes,
UUIDs, timestamps (incl. the date line of spark.properties), the recorder's port, the temp
dir holding the scenario's local files, owner uids, the field manager, and the order of
the local dirs (Spark shuffles them at random). Everything else is kept verbatim.

spark.properties is split into lines: the comment header is kept (date replaced) and the
entries are sorted, because a JDK 17 submitter writes them in hash order.
"""

from __future__ import annotations

import json
import re
from typing import Any

APP_ID = re.compile(r"spark-[0-9a-f]{32}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# uniqueID = 6 random hex + hex(currentTimeMillis & 0xFFFFFFFFFF), 16 chars these years.
UNIQUE_ID = re.compile(r"(?<![0-9a-z])[0-9a-f]{16}(?![0-9a-z])")
SUBMIT_TIME = re.compile(r"(spark\.app\.submitTime=)\d+")
LOOPBACK_PORT = re.compile(r"(127\.0\.0\.1(?:\\+)?:)\d+")
LOCAL_DIR_VOLUME = "spark-local-dir-"


def _numbered(pattern: re.Pattern[str], label: str, text: str) -> str:
    """Replace each distinct match by <label-n>, n by first appearance."""
    seen: dict[str, str] = {}

    def token(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<{label}-{len(seen) + 1}>")

    return pattern.sub(token, text)


def _split_properties(text: str) -> dict[str, Any]:
    lines = text.split("\n")
    comments = [line for line in lines if line.startswith("#")]
    if len(comments) >= 2:
        comments[1] = "#<DATE>"
    entries = sorted(line for line in lines if line and not line.startswith("#"))
    return {"comments": comments, "entries": entries}


def _canonical_local_dirs(pod: dict[str, Any]) -> None:
    """Undo Spark's random shuffle of local dirs: number them by mount path."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        return
    spark = containers[-1]
    mounts = spark.get("volumeMounts") or []
    paths = {m["name"]: m["mountPath"] for m in mounts if m["name"].startswith(LOCAL_DIR_VOLUME)}
    if len(paths) < 2:
        return
    rename = {
        name: f"{LOCAL_DIR_VOLUME}{index}"
        for index, name in enumerate(sorted(paths, key=paths.__getitem__), start=1)
    }

    def reorder(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        positions = [i for i, item in enumerate(items) if item.get("name") in rename]
        block = sorted(
            ({**items[i], "name": rename[items[i]["name"]]} for i in positions),
            key=lambda item: item["name"],
        )
        result = list(items)
        for position, item in zip(positions, block, strict=True):
            result[position] = item
        return result

    spark["volumeMounts"] = reorder(mounts)
    spec["volumes"] = reorder(spec.get("volumes") or [])
    for env in spark.get("env") or []:
        if env.get("name") == "SPARK_LOCAL_DIRS" and "value" in env:
            env["value"] = ",".join(sorted(env["value"].split(",")))


def _structural(request: dict[str, Any]) -> dict[str, Any]:
    request = json.loads(json.dumps(request))
    query = request.get("query") or {}
    if "fieldManager" in query:
        query["fieldManager"] = ["<FIELD_MANAGER>"]
    body = request.get("body")
    if isinstance(body, dict):
        metadata = body.get("metadata") or {}
        for owner in metadata.get("ownerReferences") or []:
            if "uid" in owner:
                owner["uid"] = "<OWNER_UID>"
        if body.get("kind") == "Pod":
            _canonical_local_dirs(body)
        data = body.get("data")
        if isinstance(data, dict) and isinstance(data.get("spark.properties"), str):
            data["spark.properties"] = _split_properties(data["spark.properties"])
    return request


def normalise(capture: list[dict[str, Any]], tmp_dirs: list[str]) -> list[dict[str, Any]]:
    """The capture with everything random per submission replaced by stable tokens."""
    return normalise_submission(capture, {}, tmp_dirs)["requests"]


def normalise_submission(
    capture: list[dict[str, Any]], uploads: dict[str, str], tmp_dirs: list[str]
) -> dict[str, Any]:
    """{"requests": ..., "uploads": ...} normalised together, so an upload folder's uuid gets
    the same token in the uploaded file's path as in the settings that name it."""
    structural = [_structural(request) for request in capture]
    text = json.dumps({"requests": structural, "uploads": uploads}, sort_keys=True)
    return json.loads(normalise_text(text, tmp_dirs))


def normalise_text(text: str, tmp_dirs: list[str]) -> str:
    """Temp dirs, ports, times, app ids, uuids and uniqueIDs replaced by stable tokens."""
    # Longest first, so /private/tmp/x is not cut by /tmp/x.
    for tmp in sorted({t for t in tmp_dirs if t}, key=len, reverse=True):
        text = text.replace(tmp, "<TMP>")
    text = LOOPBACK_PORT.sub(r"\1<PORT>", text)
    text = SUBMIT_TIME.sub(r"\1<TIMESTAMP>", text)
    text = APP_ID.sub("<APP_ID>", text)
    text = _numbered(UUID, "UUID", text)
    return _numbered(UNIQUE_ID, "UNIQUE_ID", text)
