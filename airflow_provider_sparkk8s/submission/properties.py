"""The driver's conf ConfigMap: `spark.properties` in java.util.Properties format, plus the
files Spark copies from the submitter's SPARK_CONF_DIR.

Spark writes the file with `Properties.store(Writer, comment)`: a comment line naming the
ConfigMap, a date comment, then `key=value` lines with Java's escaping. Non-ASCII is written
raw (the Writer variant does not use \\uXXXX). Keys are sorted, as JDK 18+ writes them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission import naming
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.spec import KubeObject

log = logging.getLogger(__name__)

PROPERTIES_FILE = "spark.properties"
CONF_VOLUME = "spark-conf-volume-driver"
CONF_DIR_IN_POD = "/opt/spark/conf"
MAX_CONF_MAP_SIZE = 1048576
_SPECIAL = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}
_ESCAPES = str.maketrans({**_SPECIAL, **{char: "\\" + char for char in "\\=:#!"}})
_EXCLUDED_CONF_FILES = (
    r".*\.(gz|zip|jar|tar)",
    r".*\.template",
    r"spark.*(conf|properties)",
)


def _escape(text: str, *, is_key: bool) -> str:
    """Java's `Properties.saveConvert` with escUnicode=false: every space of a key and a
    value's leading space get a backslash, as do the special characters."""
    escaped = text.translate(_ESCAPES)
    if is_key:
        return escaped.replace(" ", "\\ ")
    return "\\" + escaped if escaped.startswith(" ") else escaped


def _comment(text: str) -> str:
    """Java's `writeComments`: chars above U+00FF become \\uXXXX; line breaks start a new
    comment line unless the next line already starts with # or !."""
    if "\n" not in text and "\r" not in text and all(ord(char) <= 0xFF for char in text):
        return f"#{text}\n"
    out = ["#"]
    index = 0
    while index < len(text):
        char = text[index]
        if char in "\r\n":
            if char == "\r" and text[index + 1 : index + 2] == "\n":
                index += 1
            out.append("\n")
            following = text[index + 1 : index + 2]
            if following not in ("#", "!"):
                out.append("#")
        elif ord(char) > 0xFF:
            units = char.encode("utf-16-be")
            for pos in range(0, len(units), 2):
                out.append(f"\\u{units[pos : pos + 2].hex().upper()}")
        else:
            out.append(char)
        index += 1
    return "".join(out) + "\n"


def properties_text(properties: Mapping[str, str], comment: str, date: str) -> str:
    """`Properties.store` output for `properties`, keys sorted."""
    lines = [_comment(comment), _comment(date)]
    for key in sorted(properties):
        lines.append(f"{_escape(key, is_key=True)}={_escape(properties[key], is_key=False)}\n")
    return "".join(lines)


def properties_file(conf: DriverConf, system_properties: Mapping[str, str]) -> str:
    name = naming.driver_conf_map_name(conf)
    return properties_text(
        system_properties,
        f"Java properties built from Kubernetes config map with name: {name}",
        conf.ids.properties_date,
    )


def conf_dir(conf: DriverConf) -> str | None:
    """SPARK_CONF_DIR of the submitter, else `<spark.home>/conf`, else none."""
    env_dir = conf.local.environment.get("SPARK_CONF_DIR")
    if env_dir is not None:
        return env_dir
    spark_home = conf.get("spark.home")
    return f"{spark_home}/conf" if spark_home is not None else None


def max_size(conf: DriverConf) -> int:
    key = "spark.kubernetes.configMap.maxSize"
    size = cv.get_int(conf, key, MAX_CONF_MAP_SIZE) if conf.contains(key) else MAX_CONF_MAP_SIZE
    # Spark reads it as a long; whole numbers only, at most 1 MiB.
    if not 0 <= size <= MAX_CONF_MAP_SIZE:
        raise SparkConfError(key, conf.get(key), f"a whole number of bytes <= {MAX_CONF_MAP_SIZE}")
    return size


def conf_dir_files(conf: DriverConf) -> dict[str, str]:
    """The files Spark copies from the conf directory: name -> text, within the size budget.

    KubernetesClientUtils.loadSparkConfDirFiles: a file whose name and bytes pass the limit
    by themselves is left out quietly; the rest, ordered by name length plus bytes, are
    added while the running total of name and text lengths (UTF-16 units) stays below it;
    one that does not fit is skipped, with Spark's warning, and the next ones are tried."""
    directory = conf_dir(conf)
    if directory is None:
        return {}
    budget = max_size(conf)
    names = conf.local.directories.get(directory, ())
    candidates: list[tuple[int, str, str, str]] = []
    for name in names:
        path = f"{directory.rstrip('/')}/{name}"
        content = conf.local.files.get(path)
        if content is None or any(re.fullmatch(p, name) for p in _EXCLUDED_CONF_FILES):
            continue
        if len(content) + len(name) > budget:
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("Unable to read a non UTF-8 encoded file %s. Skipping...", path)
            continue
        candidates.append((len(name) + len(content), path, name, text))
    selected: dict[str, str] = {}
    skipped: list[str] = []
    total = 0
    for _, _, name, text in sorted(candidates):
        size = len(name) + _java_length(text)
        if total + size >= budget:
            skipped.append(name)
            continue
        total += size
        selected[name] = text
    if skipped:
        log.warning(
            "Skipped conf file(s) %s, due to size constraint. Please see, config: "
            "`spark.kubernetes.configMap.maxSize` for more details.",
            ",".join(skipped),
        )
    return selected


def _java_length(text: str) -> int:
    # String.length() counts UTF-16 code units.
    return len(text.encode("utf-16-le")) // 2


def _check_fits(data: Mapping[str, str], system_properties: Mapping[str, str]) -> None:
    """The API server refuses a ConfigMap whose keys and values pass 1 MiB in all, with a 422
    that names no conf key; say which key made spark.properties too big, before any request."""
    total = sum(len(key.encode()) + len(value.encode()) for key, value in data.items())
    if total <= MAX_CONF_MAP_SIZE:
        return
    key, value = max(system_properties.items(), key=lambda item: len(item[1].encode()))
    raise SparkConfError(
        key,
        f"<{len(value.encode())} bytes>",
        "a value small enough for the driver's conf ConfigMap (Kubernetes caps a ConfigMap "
        f"at {MAX_CONF_MAP_SIZE} bytes; this one would hold {total})",
        "pass large data as a file (--files) or from a Secret or ConfigMap instead",
    )


def conf_config_map(conf: DriverConf, system_properties: Mapping[str, str]) -> KubeObject:
    """The `spark-drv-<id>-conf-map`, with Spark's extra `spark.kubernetes.namespace` key."""
    max_size(conf)  # spark-submit checks the conf even when no conf dir is shipped
    data = {**conf_dir_files(conf), PROPERTIES_FILE: properties_file(conf, system_properties)}
    data["spark.kubernetes.namespace"] = conf.namespace
    _check_fits(data, system_properties)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": naming.driver_conf_map_name(conf), "namespace": conf.namespace},
        "immutable": True,
        "data": data,
    }


def conf_volume(config_map: KubeObject) -> KubeObject:
    """The pod volume: every file key (not the namespace key), sorted, mode 0644."""
    keys = sorted(key for key in config_map["data"] if key != "spark.kubernetes.namespace")
    return {
        "name": CONF_VOLUME,
        "configMap": {
            "name": config_map["metadata"]["name"],
            "items": [{"key": key, "path": key, "mode": 420} for key in keys],
        },
    }
