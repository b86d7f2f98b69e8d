"""The platform team's policy, as data: read from a JSON/YAML document, checked once.

A platform team writes the policy where DAG authors cannot change it: the `spark_k8s`
connection's `policy` extra, else Airflow's `[sparkk8s] policy` option (the operator), or
a file (`sparkk8s-submit --policy FILE` or `$SPARKK8S_POLICY_FILE`). Every field is
optional; an absent field is no rule. `guardrails.py` applies it to a rendered submission.

```
{"denied_keys": ["spark.kubernetes.authenticate.*", "spark.driver.extraJavaOptions"],
 "pinned": {"spark.eventLog.enabled": "true"},
 "allowed_namespaces": ["team-a-*"], "allowed_service_accounts": ["spark"],
 "allowed_image_registries": ["registry.example.com/spark"],
 "max_cores": 64, "max_memory": "256g", "max_executors": 20, "max_gpus": 4,
 "required_labels": ["team"], "labels": {"cost-center": "data-eng"},
 "preset": "secure"}
```

`preset` names a set of rules in one word; `secure` is the only one
(`secure_preset.py`, docs/secure_preset.md): Spark's authentication with a per-application
secret the driver owns, AES-GCM RPC encryption, I/O encryption, the executors' NetworkPolicy
and Pod Security Admission's "restricted" profile on driver and executors. Its keys act as
pins; a key the policy pins itself keeps the policy's value.

A misspelt field or a bad value is refused here, naming `policy.<field>` and where the
policy came from, so a typo cannot switch a rule off without a word.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf_values import (
    parse_size,
    validate_label_key,
    validate_label_value,
)

# What every submission carries because the submitter writes it (spark-submit's --master,
# its deploy mode, its clock): no rule is about these.
SUBMITTER_KEYS = frozenset({"spark.master", "spark.submit.deployMode", "spark.app.submitTime"})

_LIST_FIELDS = (
    "denied_keys",
    "allowed_namespaces",
    "allowed_service_accounts",
    "allowed_image_registries",
    "required_labels",
)
_CEILINGS = ("max_cores", "max_memory", "max_executors", "max_gpus")
FIELDS = (*_LIST_FIELDS, "pinned", "labels", *_CEILINGS, "preset")
PRESETS = ("secure",)  # application/policy/secure_preset.py


@record
class Policy:
    """A parsed policy. `None` for an allow-list or a ceiling: no rule; `()` allows none."""

    source: str  # where it came from: "connection 'x' (extra policy)", "file <path>", ...
    denied_keys: tuple[str, ...] = ()  # fnmatch globs over conf keys
    pinned: Mapping[str, str] = field(default_factory=dict)
    allowed_namespaces: tuple[str, ...] | None = None  # globs
    allowed_service_accounts: tuple[str, ...] | None = None  # globs
    allowed_image_registries: tuple[str, ...] | None = None  # registry[/path] prefixes
    max_cores: float | None = None
    max_memory_mib: int | None = None
    max_executors: int | None = None
    max_gpus: int | None = None
    required_labels: tuple[str, ...] = ()  # on the driver and in the executors' labels
    labels: Mapping[str, str] = field(default_factory=dict)  # added by the operator
    preset: str | None = None  # one of PRESETS

    def rules(self) -> list[str]:
        """The rules in force, as `field=value` (what a dry run shows)."""
        shown: list[str] = []
        for name in _LIST_FIELDS:
            value = getattr(self, name)
            if value is not None and (value or name.startswith("allowed_")):
                shown.append(f"{name}={list(value)}")
        if self.pinned:
            shown.append(f"pinned={sorted(self.pinned)}")
        for name, value in (
            ("max_cores", self.max_cores),
            ("max_memory", None if self.max_memory_mib is None else f"{self.max_memory_mib}m"),
            ("max_executors", self.max_executors),
            ("max_gpus", self.max_gpus),
        ):
            if value is not None:
                shown.append(f"{name}={value}")
        if self.preset is not None:
            shown.append(f"preset={self.preset}")
        return shown


def _refuse(source: str, name: str, value: Any, accepted: str) -> SparkConfError:
    return SparkConfError(f"policy.{name}", value, accepted, f"in {source}")


def _strings(source: str, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _refuse(source, name, value, "a list of strings")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise _refuse(source, name, value, "a list of non-empty strings")
    return tuple(item.strip() for item in value)


def _string_map(source: str, name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _refuse(source, name, value, "an object of string keys")
    # JSON's true/5 mean Spark's "true"/"5"; nested values mean a mistake.
    if any(isinstance(v, Mapping | list) or v is None for v in value.values()):
        raise _refuse(source, name, value, "an object of string, number or boolean values")
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}


def _number(source: str, name: str, value: Any, *, whole: bool) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value) if not whole else int(value)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0 or (whole and value != int(value)):
        raise _refuse(source, name, value, "a whole number >= 0" if whole else "a number >= 0")
    return float(value)


def parse_policy(document: Mapping[str, Any], source: str) -> Policy:
    """A policy from its parsed document; every field checked."""
    unknown = sorted(set(document) - set(FIELDS))
    if unknown:
        raise _refuse(source, unknown[0], document[unknown[0]], f"one of {', '.join(FIELDS)}")
    values: dict[str, Any] = {}
    for name in _LIST_FIELDS:
        if name in document:
            values[name] = _strings(source, name, document[name])
    if "pinned" in document:
        pinned = _string_map(source, "pinned", document["pinned"])
        submitter = sorted(SUBMITTER_KEYS & set(pinned))
        if submitter:
            raise _refuse(source, "pinned", submitter[0], "a key the submitter does not set")
        values["pinned"] = pinned
    if "labels" in document:
        labels = _string_map(source, "labels", document["labels"])
        for key, value in labels.items():
            validate_label_key(f"policy.labels.{key}", key)
            validate_label_value(f"policy.labels.{key}", value)
        values["labels"] = labels
    if "max_cores" in document:
        values["max_cores"] = float(
            _number(source, "max_cores", document["max_cores"], whole=False)
        )
    for name in ("max_executors", "max_gpus"):
        if name in document:
            values[name] = int(_number(source, name, document[name], whole=True))
    if "max_memory" in document:
        memory = document["max_memory"]
        if isinstance(memory, int) and not isinstance(memory, bool):
            memory = str(memory)
        if not isinstance(memory, str):
            raise _refuse(source, "max_memory", memory, "a size such as 256g (bare: MiB)")
        try:
            values["max_memory_mib"] = parse_size("policy.max_memory", memory, "m")
        except SparkConfError as error:
            raise _refuse(source, "max_memory", memory, error.accepted) from None
    if "preset" in document:
        preset = document["preset"]
        if not isinstance(preset, str) or preset.strip().lower() not in PRESETS:
            raise _refuse(source, "preset", preset, f"one of {', '.join(PRESETS)}")
        values["preset"] = preset.strip().lower()
    return Policy(source=source, **values)


def read_policy_text(text: str, source: str) -> Policy | None:
    """A policy from JSON or YAML text (a file, an Airflow option); None when blank."""
    if not text.strip():
        return None
    import yaml  # JSON is YAML; a platform team may write either

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "its text"
        raise SparkConfError(
            "policy", f"<{where}>", "a JSON or YAML object", f"in {source}"
        ) from None
    return policy_from_value(document, source)


def policy_from_value(value: Any, source: str) -> Policy | None:
    """A connection extra holds the policy as an object, or as JSON text (the form's field)."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, str):
        return read_policy_text(value, source)
    if not isinstance(value, Mapping):
        raise SparkConfError(
            "policy", type(value).__name__, "a JSON or YAML object", f"in {source}"
        )
    return parse_policy(value, source)
