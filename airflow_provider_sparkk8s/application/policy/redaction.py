"""Redact secrets from rendered objects before they are logged (dry run).

Spark redacts with `spark.redaction.regex` (submission/redaction_regex.py) when it prints
conf: a value whose key or value matches is replaced. We apply the same rule to what a dry
run prints:
the lines of `spark.properties`, container environment variables, and every value of a
Secret object.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_sparkk8s.submission.redaction_regex import (
    ALWAYS_REDACTED,
    DEFAULT_REDACTION_REGEX,
    redaction_pattern,
)

__all__ = ["ALWAYS_REDACTED", "DEFAULT_REDACTION_REGEX", "redact_objects", "redaction_pattern"]

REDACTED = "*********(redacted)"


def _redact_properties(text: str, pattern: re.Pattern[str]) -> str:
    lines = []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        secret = sep and not line.startswith("#") and (pattern.search(key) or pattern.search(value))
        lines.append(f"{key}={REDACTED}" if secret else line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _redact_containers(spec: dict[str, Any], pattern: re.Pattern[str]) -> None:
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            for env in container.get("env") or []:
                if "value" in env and pattern.search(str(env.get("name", ""))):
                    env["value"] = REDACTED


def redact_objects(
    objects: Iterable[Mapping[str, Any]], pattern: re.Pattern[str]
) -> list[dict[str, Any]]:
    """Copies of the objects with secret values replaced (the inputs are not changed)."""
    redacted = []
    for original in objects:
        obj = copy.deepcopy(dict(original))
        kind = obj.get("kind")
        if kind == "Secret":
            for field in ("data", "stringData"):
                if isinstance(obj.get(field), dict):
                    obj[field] = dict.fromkeys(obj[field], REDACTED)
        elif kind == "ConfigMap" and isinstance(obj.get("data"), dict):
            obj["data"] = {
                key: _redact_properties(value, pattern)
                if key.endswith(".properties") and isinstance(value, str)
                else value
                for key, value in obj["data"].items()
            }
        elif kind == "Pod":
            _redact_containers(obj.get("spec") or {}, pattern)
        redacted.append(obj)
    return redacted
