"""spark-submit's `resolveGlobPaths` for local dependency entries, pure.

Before anything is uploaded, spark-submit expands every local entry of `--jars`, `--files`,
`--py-files` and `--archives` through Hadoop's glob: a pattern becomes the regular files it
matches, a directory (or a pattern matching only directories, or nothing) drops out of the
list without a word, and a path that does not exist stays as written (its upload fails
later). We do the same, and log a warning for every entry that drops out.

The file system is read by the `ListFiles` callable the shell passes in
(`list_local_files`); remote entries are never touched (spark-submit would glob them
through Hadoop's client for their scheme, which we do not have).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from urllib.parse import quote

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf_values import split_list
from airflow_provider_sparkk8s.submission.upload_plan import local_path, split_fragment
from airflow_provider_sparkk8s.submission.uris import is_local_dependency

log = logging.getLogger(__name__)

# path or pattern -> the regular files it names, in order; None: no such path (kept as is)
ListFiles = Callable[[str], "Sequence[str] | None"]
GLOB_CHARS = "*?["
PATH_SAFE = "/:@!$&'()*+,;=-._~"


def resolve_local_globs(key: str, value: str, list_files: ListFiles) -> str:
    """The comma list `value` of conf `key` with its local entries resolved as spark-submit
    resolves them (see the module doc)."""
    resolved: list[str] = []
    for entry in split_list(value):
        if not is_local_dependency(entry):
            resolved.append(entry)
            continue
        base, fragment = split_fragment(entry)
        path = local_path(base)
        matches = list_files(path)
        if matches is None or list(matches) == [path]:
            resolved.append(entry)
            continue
        if not matches:
            log.warning(
                "%s: %s is a directory or matches no file; spark-submit leaves it out of the "
                "list, and so do we",
                key,
                entry,
            )
            continue
        if fragment is not None and len(matches) > 1:
            raise SparkConfError(
                key, entry, "a path naming one file (it has a #fragment)",
                f"it matches {len(matches)} files",
            )  # fmt: skip
        suffix = "" if fragment is None else f"#{fragment}"
        resolved.extend(f"file:{quote(match, safe=PATH_SAFE)}{suffix}" for match in matches)
    return ",".join(resolved)


def no_listing(path: str) -> Sequence[str] | None:
    """The pure default: every entry stays as written."""
    return None


def list_local_files(path: str) -> Sequence[str] | None:
    """IMPURE: the regular files `path` names on this machine (a glob pattern is expanded,
    sorted as Hadoop sorts them); None when a plain path does not exist."""
    if not any(char in path for char in GLOB_CHARS):
        if not os.path.lexists(path):
            return None
        return [path] if os.path.isfile(path) else []
    import glob  # only a pattern needs it, and start-up is a CLI's wall time

    return sorted(match for match in glob.glob(path) if os.path.isfile(match))
