"""Near misses of the conf keys Spark defines: "did you mean spark.executor.memory?".

spark-submit accepts any `spark.*` key and Spark ignores the ones it does not read, so a
typo (`spark.executor.memroy`) costs a run with the default. This only warns, never refuses.
The keys each line defines are data (`defined_conf_keys.py`, generated from the real
distributions by testenv/spark_conf_keys.py); the families below take any suffix, so a key
under one is never a typo. A key is checked only when it is defined on no line at all (a
key of another line is not a typo), and a match must be close: a few edits away. Pure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from airflow_provider_sparkk8s.submission.defined_conf_keys import KEYS, LINES

# Families whose keys are names the user chooses (labels, env vars, volumes, Hadoop's and
# Hive's own keys, resource and catalog names, transport modules, SSL namespaces), and the
# OpenLineage integration's keys, which the operator itself sets.
# A pattern string, compiled by re on first use: most submissions have no unknown key and
# start-up is most of a CLI's wall time.
OPEN_FAMILIES = (
    r"spark\.("
    r"kubernetes\.(driver|executor)\.(label|annotation|service\.label|service\.annotation"
    r"|node\.selector|secrets|secretKeyRef|volumes)\."
    r"|kubernetes\.node\.selector\.|kubernetes\.driverEnv\."
    r"|executorEnv\.|yarn\.appMasterEnv\.|hadoop\.|hive\.|metrics\.conf\."
    r"|(driver|executor|task)\.resource\.|yarn\.(am|driver|executor)\.resource\."
    r"|sql\.catalog\.|ssl\.|[^.]+\.io\.|io\.encryption\.commons\.config\."
    r"|network\.crypto\.config\.|plugins\.internal\.conf\.|openlineage\."
    r")"
)
_CUTOFF = 0.85  # difflib's ratio: what is close enough to be looked at


def _line_bit(spark_version: str) -> int:
    line = ".".join(spark_version.split(".")[:2])
    return 1 << LINES.index(line) if line in LINES else (1 << len(LINES)) - 1


@functools.cache
def _keys_of(bit: int, length: int, allowed: int) -> tuple[str, ...]:
    """The line's keys that `allowed` edits can reach from a key of `length` characters (an
    edit changes the length by one at most): a tenth of them, for difflib to compare."""
    return tuple(
        key for key, lines in KEYS.items() if lines & bit and abs(len(key) - length) <= allowed
    )


def _edits(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def near_miss(key: str, spark_version: str) -> str | None:
    """The key of `spark_version`'s line that `key` looks like a typo of, or None."""
    if not key.startswith("spark.") or key in KEYS or re.match(OPEN_FAMILIES, key):
        return None
    import difflib  # here: only a key Spark does not define is compared

    allowed = 2 if len(key) <= 30 else 3
    candidates = _keys_of(_line_bit(spark_version), len(key), allowed)
    for candidate in difflib.get_close_matches(key, candidates, n=3, cutoff=_CUTOFF):
        if _edits(key, candidate) <= allowed:
            return candidate
    return None


def typo_warnings(keys: Iterable[str], spark_version: str) -> list[str]:
    """One warning per key that is a near miss of a key Spark `spark_version` defines."""
    line = ".".join(spark_version.split(".")[:2])
    warnings = []
    for key in keys:
        match = near_miss(key, spark_version)
        if match is not None:
            warnings.append(
                f"{key} is not a conf key of Spark {line}: did you mean {match}? "
                "(Spark ignores keys it does not define; the submission goes ahead.)"
            )
    return warnings
