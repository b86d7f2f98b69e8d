"""Typed reads of a Spark conf, with Spark's parsing rules.

Spark parses sizes with `JavaUtils.byteStringAs`, times with `timeStringAs`, booleans with
Scala's `toBoolean`, doubles with Java's `Double.parseDouble`; a port must accept and refuse
exactly what those accept and refuse, or a conf that spark-submit takes would fail here (or
the reverse). Every refusal is a `SparkConfError` naming the key and the value.

All functions take either a `DriverConf` or a plain mapping of conf keys to strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Protocol, TypeAlias

    class _HasSparkConf(Protocol):
        @property
        def spark_conf(self) -> Mapping[str, str]: ...


ConfLike: TypeAlias = "Mapping[str, str] | _HasSparkConf"


def as_mapping(conf: ConfLike) -> Mapping[str, str]:
    """The plain key -> value mapping behind a DriverConf, or the mapping itself."""
    if isinstance(conf, Mapping):
        return conf
    return conf.spark_conf


def get_str(conf: ConfLike, key: str, default: str | None = None) -> str | None:
    return as_mapping(conf).get(key, default)


# --- sizes -------------------------------------------------------------------------------

BYTE_UNITS: dict[str, int] = {
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "p": 1 << 50,
    "pb": 1 << 50,
}
# Spark 4.2's JavaUtils also takes the IEC spellings: ki/kib, mi/mib, gi/gib, ti/tib, pi/pib
# (any case); 3.5-4.1 refuse them. Same factors as k, m, g, t, p.
IEC_BYTE_UNITS: dict[str, int] = {
    prefix + suffix: BYTE_UNITS[prefix] for prefix in "kmgtp" for suffix in ("i", "ib")
}
IEC_SIZES_SINCE = (4, 2)
_SIZE_ACCEPTED = (
    "a non-negative whole number with an optional unit b, k, kb, m, mb, g, gb, t, tb, p or pb "
    "(case-insensitive), such as 512m or 2g"
)
_IEC_SIZE_ACCEPTED = (
    "a non-negative whole number with an optional unit b, k, kb, ki, kib, m, mb, mi, mib, g, "
    "gb, gi, gib, t, tb, ti, tib, p, pb, pi or pib (case-insensitive), such as 512m or 2gib"
)
_SIZE = re.compile(r"([0-9]+)([a-z]+)?")
_FRACTIONAL_SIZE = re.compile(r"([0-9]+\.[0-9]+)([a-z]+)?")
_JAVA_LONG_MAX = (1 << 63) - 1


def version_tuple(version: str) -> tuple[int, int, int]:
    """`4.2.1` or `4.2.1-preview` as (4, 2, 1); missing parts are 0."""
    parts = ([*version.split("-")[0].split("."), "0", "0"])[:3]
    return (int(parts[0]), int(parts[1]), int(parts[2]))


def iec_sizes(version: str) -> bool:
    """Whether this Spark release's size strings take the IEC units (`2gib`, `512mi`)."""
    return version_tuple(version)[:2] >= IEC_SIZES_SINCE


def parse_size(
    key: str, value: str, default_unit: str = "b", *, unit: str | None = None, iec: bool = False
) -> int:
    """Spark's `byteStringAs(value, unit)`: a bare number is in `default_unit`; the result is in
    `unit` (default: `default_unit`), converted with integer truncation. `iec`: the unit may
    also be an IEC one (Spark 4.2 and later).

    Spark's bytesConf also accepts a leading `-`; no size a driver pod needs can be negative,
    so a negative size is refused here.
    """
    units = {**BYTE_UNITS, **IEC_BYTE_UNITS} if iec else BYTE_UNITS
    accepted = _IEC_SIZE_ACCEPTED if iec else _SIZE_ACCEPTED
    target = BYTE_UNITS[unit or default_unit]
    text = value.strip().lower()
    if _FRACTIONAL_SIZE.fullmatch(text):
        raise SparkConfError(key, value, accepted, "fractional sizes are not supported")
    match = _SIZE.fullmatch(text)
    if not match:
        raise SparkConfError(key, value, accepted)
    number = int(match.group(1))
    suffix = match.group(2)
    if suffix is not None and suffix not in units:
        known_later = suffix in IEC_BYTE_UNITS
        why = f"unit {suffix!r} needs Spark 4.2 or later" if known_later else None
        raise SparkConfError(key, value, accepted, why or f"unknown unit {suffix!r}")
    if number > _JAVA_LONG_MAX:
        raise SparkConfError(key, value, accepted, "the number is too large")
    source = units[suffix] if suffix else BYTE_UNITS[default_unit]
    if source >= target:
        result = number * (source // target)
        if result > _JAVA_LONG_MAX:
            raise SparkConfError(key, value, accepted, "the size is too large")
        return result
    return number // (target // source)


def _iec(conf: ConfLike) -> bool:
    """A DriverConf knows its Spark release; a plain mapping takes the older units only."""
    version = getattr(conf, "spark_version", None)
    return isinstance(version, str) and iec_sizes(version)


def get_size_mib(conf: ConfLike, key: str, default: str | None = None) -> int | None:
    """A size conf read in MiB (a bare number means MiB), like Spark's bytesConf(MiB)."""
    value = get_str(conf, key, default)
    return None if value is None else parse_size(key, value, "m", iec=_iec(conf))


# --- times -------------------------------------------------------------------------------

# Milliseconds per unit, as Decimal text: decimal is imported on first use (start-up is a
# CLI's wall time, and most submissions parse no time).
TIME_UNITS_MS: dict[str, str] = {
    "us": "0.001",
    "ms": "1",
    "s": "1000",
    "m": "60000",
    "min": "60000",
    "h": "3600000",
    "d": "86400000",
}
_TIME = r"(-?[0-9]+)([a-z]+)?"  # compiled by re on first use, as the two below
_TIME_ACCEPTED = (
    "a whole number with an optional unit us, ms, s, m, min, h or d, such as 1s or 500ms"
)


def parse_time_ms(key: str, value: str, default_unit: str = "ms") -> int:
    """Spark's `timeStringAs(value, unit)` with the result in milliseconds (truncated)."""
    text = value.strip().lower()
    match = re.fullmatch(_TIME, text)
    if not match:
        raise SparkConfError(key, value, _TIME_ACCEPTED)
    suffix = match.group(2)
    if suffix is not None and suffix not in TIME_UNITS_MS:
        raise SparkConfError(key, value, _TIME_ACCEPTED, f"unknown unit {suffix!r}")
    from decimal import Decimal

    millis = int(match.group(1)) * Decimal(TIME_UNITS_MS[suffix or default_unit])
    return int(millis)


# --- numbers -----------------------------------------------------------------------------

_JAVA_INT = r"[+-]?[0-9]+"
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def parse_int(key: str, value: str, *, trim: bool = True) -> int:
    """Java `Integer.parseInt` (Spark's intConf trims first; raw `getInt` does not)."""
    text = value.strip() if trim else value
    if not re.fullmatch(_JAVA_INT, text) or not _INT_MIN <= int(text) <= _INT_MAX:
        raise SparkConfError(key, value, "a whole number between -2147483648 and 2147483647")
    return int(text)


def get_int(conf: ConfLike, key: str, default: int, *, trim: bool = True) -> int:
    value = get_str(conf, key)
    return default if value is None else parse_int(key, value, trim=trim)


_JAVA_DOUBLE = r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)"


def parse_double(key: str, value: str) -> float:
    """Java `Double.parseDouble` after a trim (decimal forms; hex floats are not accepted)."""
    text = value.strip()
    if not re.fullmatch(_JAVA_DOUBLE, text):
        raise SparkConfError(key, value, "a decimal number such as 0.1")
    text = text.rstrip("fFdD") if not text.endswith("Infinity") else text
    return float(text.replace("Infinity", "inf"))


def get_double(conf: ConfLike, key: str, default: float | None = None) -> float | None:
    value = get_str(conf, key)
    return default if value is None else parse_double(key, value)


def java_double_to_string(value: float) -> str:
    """Java's `Double.toString`: `0.1`, `1.0`, `1.0E-4`, `1.0E7`, `NaN`, `Infinity`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest digits that round-trip, as Java 19+ does: `123.45`, `1e-05`.
    mantissa, _, power = repr(abs(value)).partition("e")
    before_point, _, after_point = mantissa.partition(".")
    significant = (before_point + after_point).lstrip("0")
    exponent = len(significant) - 1 + int(power or 0) - len(after_point)  # scientific exponent
    digits = significant.rstrip("0")
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1 :] or "0"
        else:
            whole = "0"
            fraction = "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction}"
    fraction = digits[1:] or "0"
    return f"{sign}{digits[0]}.{fraction}E{exponent}"


# --- booleans ----------------------------------------------------------------------------


def parse_bool(key: str, value: str, *, trim: bool = True) -> bool:
    """Scala's `toBoolean`: `true`/`false` in any case; anything else is refused."""
    text = (value.strip() if trim else value).lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise SparkConfError(key, value, "true or false")


def get_bool(conf: ConfLike, key: str, default: bool, *, trim: bool = True) -> bool:
    value = get_str(conf, key)
    return default if value is None else parse_bool(key, value, trim=trim)


# --- lists ---------------------------------------------------------------------------------


def split_list(value: str | None) -> list[str]:
    """Spark's `stringToSeq`: split on commas, trim, drop empties."""
    if value is None:
        return []
    return [item.strip() for item in value.split(",") if item.strip()]


def get_list(conf: ConfLike, key: str) -> list[str]:
    return split_list(get_str(conf, key))


# --- cores and Kubernetes quantities -----------------------------------------------------

_QUANTITY = re.compile(
    r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)
_QUANTITY_ACCEPTED = "a non-negative Kubernetes quantity such as 0.5, 500m or 2"


def validate_quantity(key: str, value: str) -> str:
    """Return `value` unchanged if Kubernetes accepts it as a resource quantity."""
    if not _QUANTITY.fullmatch(value):
        raise SparkConfError(key, value, _QUANTITY_ACCEPTED)
    return value


def get_cores_quantity(conf: ConfLike, key: str, default: str | None = None) -> str | None:
    """Cores given as a string that goes verbatim into a pod (`request.cores`, `limit.cores`)."""
    value = get_str(conf, key, default)
    return None if value is None else validate_quantity(key, value)


# --- Kubernetes names, labels and annotations --------------------------------------------

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_KEY_ACCEPTED = (
    "an optional DNS subdomain prefix (at most 253 characters) and '/', then a name of at most "
    "63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
)
_LABEL_VALUE_ACCEPTED = (
    "at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit (or empty)"
)


def is_dns1123_label(name: str) -> bool:
    return len(name) <= 63 and bool(_DNS1123_LABEL.fullmatch(name))


def is_dns1123_subdomain(name: str) -> bool:
    return len(name) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(name))


def _is_qualified_name(name: str) -> bool:
    prefix, slash, rest = name.rpartition("/")
    if slash and not (prefix and is_dns1123_subdomain(prefix)):
        return False
    return 0 < len(rest) <= 63 and bool(_QUALIFIED_NAME_PART.fullmatch(rest))


def validate_label_key(conf_key: str, label_key: str) -> str:
    if not _is_qualified_name(label_key):
        raise SparkConfError(conf_key, label_key, _LABEL_KEY_ACCEPTED, "invalid label key")
    return label_key


def validate_label_value(conf_key: str, value: str) -> str:
    if value and not (len(value) <= 63 and _QUALIFIED_NAME_PART.fullmatch(value)):
        raise SparkConfError(conf_key, value, _LABEL_VALUE_ACCEPTED, "invalid label value")
    return value


def validate_annotation_key(conf_key: str, annotation_key: str) -> str:
    # The API server checks annotation keys lower-cased, so upper case is fine there.
    if not _is_qualified_name(annotation_key.lower()):
        raise SparkConfError(
            conf_key, annotation_key, _LABEL_KEY_ACCEPTED, "invalid annotation key"
        )
    return annotation_key


MAX_ANNOTATIONS_BYTES = 256 * 1024


def validate_labels(conf_prefix: str, labels: Mapping[str, str]) -> dict[str, str]:
    """Check every key and value of a label map read from `conf_prefix<key>` entries."""
    for key, value in labels.items():
        validate_label_key(conf_prefix + key, key)
        validate_label_value(conf_prefix + key, value)
    return dict(labels)


def validate_annotations(conf_prefix: str, annotations: Mapping[str, str]) -> dict[str, str]:
    total = 0
    for key, value in annotations.items():
        validate_annotation_key(conf_prefix + key, key)
        total += len(key.encode()) + len(value.encode())
    if total > MAX_ANNOTATIONS_BYTES:
        raise SparkConfError(
            conf_prefix + "*", f"{total} bytes", "annotations of at most 256 KiB in total"
        )
    return dict(annotations)


def resource_quantities(conf: Mapping[str, str], prefix: str) -> dict[str, str]:
    """`<vendor>/<name>: amount` for every `<prefix><name>.amount` (Spark's
    KubernetesUtils.buildResourcesQuantities, shared by the driver and the executors)."""
    names = list(
        dict.fromkeys(
            key[len(prefix) :].split(".", 1)[0]
            for key in conf
            if key.startswith(prefix) and "." in key[len(prefix) :]
        )
    )
    limits: dict[str, str] = {}
    for name in names:
        amount_key = f"{prefix}{name}.amount"
        if amount_key not in conf:
            raise SparkConfError(amount_key, None, "a whole number of units of the resource")
        amount = parse_int(amount_key, conf[amount_key], trim=False)
        if amount < 0:
            raise SparkConfError(amount_key, str(amount), "a whole number >= 0")
        vendor_key = f"{prefix}{name}.vendor"
        vendor = conf.get(vendor_key)
        if not vendor:
            raise SparkConfError(
                vendor_key,
                vendor,
                "the resource vendor domain, such as nvidia.com",
                f"Resource: {name} was requested, but vendor was not specified",
            )
        resource_name = f"{vendor}/{name}"
        validate_label_key(vendor_key, resource_name)
        limits[resource_name] = str(amount)
    return limits
