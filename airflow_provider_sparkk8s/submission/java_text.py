"""The few JDK string and path behaviours Spark's steps rely on, as pure functions.

Spark splits with `String.split` (trailing empty pieces dropped), trims with `String.trim`
(every char up to U+0020), names files with `java.io.File.getName` (after File's own path
normalisation) and reads text files through a UTF-8 decoder that replaces malformed bytes.
Matching these keeps names and contents identical to what spark-submit sends.
"""

from __future__ import annotations


def java_split(text: str, separator: str) -> list[str]:
    """`String.split(separator)` for a literal one-char separator: trailing empties dropped."""
    if separator not in text:
        return [text]  # Java returns the input itself, even when it is empty
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))


def java_trim(text: str) -> str:
    """`String.trim()`: drops every char <= U+0020 at both ends, not just whitespace."""
    return text.strip(_JAVA_TRIMMED)


def java_file_name(path: str) -> str:
    """`new File(path).getName()` on Unix (Spark's `Utils.stripDirectory`): File collapses
    `//` and drops a trailing `/`, so only a path of slashes (or none) names ""."""
    normalized = "/".join(part for part in path.split("/") if part != "")
    return normalized.rsplit("/", 1)[-1]


def read_utf8(content: bytes) -> str:
    """Text of a file read as UTF-8 with malformed input replaced (Guava's CharSource)."""
    return content.decode("utf-8", errors="replace")
