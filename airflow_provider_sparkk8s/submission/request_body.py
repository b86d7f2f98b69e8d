"""The bytes of a submission's request bodies: what fabric8 writes for spark-submit.

fabric8 serialises every object with Jackson: compact JSON, non-ASCII text as raw UTF-8
(never `\\uXXXX`), for the pod's create (`application/json`) and for the server-side
applies (sent as `application/apply-patch+yaml`). The API server reads an apply body with
its YAML decoder, which refuses a surrogate-pair escape (`\\ud83d\\ude80`, what Python's
default `json.dumps` writes for any character beyond the BMP), refuses a few characters
raw (DEL, the C1 controls, U+FFFE, U+FFFF) and reads NEL, U+2028 and U+2029 inside a quoted
string as line breaks, folding them into a space. So: raw UTF-8 as fabric8 sends it, and
those few (which fabric8 sends raw, to be refused or changed) as `\\uXXXX` escapes, which
both decoders read back as the same character.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

# Not printable for YAML, or a line break to it; all in the BMP, so \uXXXX is fine.
_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")


def json_body(obj: Any) -> bytes:
    """Compact JSON, UTF-8, non-ASCII raw (as fabric8 sends it)."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return _NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")
