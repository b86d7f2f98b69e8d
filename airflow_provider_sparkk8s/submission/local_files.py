"""Lookups into the files the shell read from the submitting machine (`conf.local`).

Steps are pure, so a file Spark would open is looked up here by the path Spark would open;
a missing entry means the shell could not read it, which Spark reports as an I/O error
before anything is created, and this reports as a `SparkConfError` naming the key.
"""

from __future__ import annotations

import posixpath

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.java_text import read_utf8

# The API server refuses ConfigMap and Secret keys outside this alphabet.
CONFIG_MAP_KEY_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"
)
CONFIG_MAP_MAX_BYTES = 1024 * 1024


def file_bytes(conf: DriverConf, key: str, path: str) -> bytes:
    """Content of the local file `path` named by conf key (or env var) `key`."""
    content = conf.local.files.get(path)
    if content is None:
        raise SparkConfError(key, path, "the path of a readable local file")
    return content


def directory_files(conf: DriverConf, key: str, directory: str) -> list[tuple[str, bytes]]:
    """(file name, content) of the regular files directly in `directory`, in listing order.

    A directory the shell did not list is not a directory (Spark then ships no files).
    """
    names = conf.local.directories.get(directory)
    if names is None:
        return []
    found = []
    for name in names:
        candidates = (posixpath.join(directory, name), directory.rstrip("/") + "/" + name)
        content = next((conf.local.files[c] for c in candidates if c in conf.local.files), None)
        if content is None:
            raise SparkConfError(key, candidates[0], "a directory whose files are readable")
        found.append((name, content))
    return found


STRICT_UTF8_SINCE = (4, 3, 0)


def file_text(conf: DriverConf, key: str, path: str, content: bytes) -> str:
    """A text file as Spark reads it: 4.3 uses Files.readString, which refuses malformed
    UTF-8; 3.5 used Guava, which replaces it."""
    if conf.version_tuple < STRICT_UTF8_SINCE:
        return read_utf8(content)
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise SparkConfError(key, path, "a UTF-8 text file", "it is not valid UTF-8") from None


def is_config_map_key(name: str) -> bool:
    return bool(name) and len(name) <= 253 and set(name) <= CONFIG_MAP_KEY_CHARS


def check_config_map_data(key: str, value: str, data: dict[str, str] | dict[str, bytes]) -> None:
    """Refuse data the API server would refuse: bad key names, more than 1 MiB in total."""
    total = 0
    for name, content in data.items():
        if not is_config_map_key(name) or name in (".", ".."):
            raise SparkConfError(
                key,
                value,
                "files whose names use only letters, digits, '-', '_' and '.'",
                f"{name!r} cannot be a ConfigMap key",
            )
        total += len(name) + len(content.encode() if isinstance(content, str) else content)
    if total > CONFIG_MAP_MAX_BYTES:
        raise SparkConfError(
            key, value, "files of at most 1 MiB in total", f"they hold {total} bytes"
        )
