"""`spark.redaction.regex` as Spark reads it: which conf keys look secret.

Spark redacts a printed conf entry whose key or value matches the pattern (default below).
The dry run's redaction (application/policy/redaction.py) and the secret confs kept out of the
driver's ConfigMap (secret_confs.py) read the same pattern from here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key"
# Always masked as well: OpenLineage's transport API key (`...transport.auth.apiKey`), which
# the operator injects, and hadoop-azure's shared keys (`spark.hadoop.fs.azure.account.key.
# <host>`, which the upload reads too): Spark's default pattern covers neither.
ALWAYS_REDACTED = r"(?i:api[._-]?key|account[.]key)"
_GLOBAL_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")


def redaction_pattern(spark_conf: Mapping[str, Any]) -> re.Pattern[str]:
    """The user's `spark.redaction.regex`, else Spark's default; API keys in any case."""
    user = str(spark_conf.get("spark.redaction.regex") or DEFAULT_REDACTION_REGEX)
    flags = _GLOBAL_FLAGS.match(user)  # Java-style leading flags must stay in front
    prefix = flags.group(0) if flags else ""
    return re.compile(f"{prefix}(?:{user[len(prefix) :]})|{ALWAYS_REDACTED}")
