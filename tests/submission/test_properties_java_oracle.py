"""`--properties-file` parsing against java.util.Properties itself (Java 17, one process).

Spark reads a properties file with `Properties.load(Reader)`; our loader must accept and
refuse exactly what it does, `\\u` escapes included, and produce the same strings (compared
as UTF-16 code units, as Java holds them).
"""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties

ORACLE = Path(__file__).with_name("java") / "PropertiesOracle.java"

HAND_PICKED = [
    "a=\\u00e9",
    "a=\\u00E9\\u00e9x",
    "a=\\u12",  # too few digits at the end
    "a=\\u12g4",  # not hex
    "a=\\u+123",  # int(..., 16) would take a sign
    "a=\\u 123",  # ... and blanks
    "a=\\u1_23",  # ... and underscores
    "a=\\u",
    "a=\\\\u12",  # an escaped backslash, then plain text
    "\\u0041\\u0042=key escaped",
    "a=\\ud83d\\ude00",  # a surrogate pair: one character
    "a=x\\\n  \\u0041",  # continuation, then an escape
    "bad\\u00zz=1",
    "a=\\uD83D",  # a lone surrogate stays one
    "a=1\nb=\\u004",
]
# Characters that make escapes, separators, comments and continuations likely.
ALPHABET = "\\\\\\uuuu0123456789abcdefABCDEFgxz +_=:#!\t\n\r é"


def random_texts(count: int, seed: int = 15) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(count)]


def utf16_hex(text: str) -> str:
    return "x" + text.encode("utf-16-be", "surrogatepass").hex()


def ours(text: str) -> str:
    try:
        loaded = load_java_properties(text)
    except SparkConfError:
        return "ERR"
    pairs = sorted((utf16_hex(key), utf16_hex(value)) for key, value in loaded.items())
    return "OK" + "".join(f" {key}={value}" for key, value in pairs)


def java(texts: list[str]) -> list[str]:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the oracle needs Java 17")
    stdin = "".join(base64.b64encode(text.encode()).decode() + "\n" for text in texts)
    done = subprocess.run(
        ["java", str(ORACLE)], input=stdin, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.splitlines()


@pytest.mark.server  # a JVM: `make check` leaves it out
def test_escapes_as_java_reads_them() -> None:
    texts = HAND_PICKED + random_texts(1500)
    expected = java(texts)
    assert len(expected) == len(texts)
    mismatches = [
        (text, want, got)
        for text, want in zip(texts, expected, strict=True)
        if (got := ours(text)) != want
    ]
    assert not mismatches, mismatches[:5]
    refused = sum(answer == "ERR" for answer in expected)
    assert 50 < refused < len(texts) - 50  # both outcomes are exercised


def test_a_malformed_escape_names_the_key_and_only_the_escape() -> None:
    with pytest.raises(SparkConfError) as raised:
        load_java_properties("spark.secret.token=abc\\u12zz-rest-of-secret")
    message = str(raised.value)
    assert "spark.secret.token" in message and "\\\\u12zz" in message
    assert "rest-of-secret" not in message
