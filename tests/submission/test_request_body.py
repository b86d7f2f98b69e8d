"""Request bodies as fabric8 writes them: compact JSON, non-ASCII as raw UTF-8."""

from __future__ import annotations

import json

import yaml

from airflow_provider_sparkk8s.submission.request_body import json_body

OBJECT = {"metadata": {"annotations": {"note": "lift-off 🚀 𠜎 é"}}, "data": {"k": 'a\nb\t"c"'}}


def test_non_ascii_goes_raw_never_as_surrogate_escapes() -> None:
    body = json_body(OBJECT)
    assert "🚀".encode() in body and "𠜎".encode() in body
    assert b"\\ud83d" not in body.lower()
    assert body.startswith(b'{"metadata":{"annotations":{"note":"lift-off ')  # compact
    assert json.loads(body) == OBJECT


def test_characters_yaml_refuses_raw_are_escaped() -> None:
    value = "del\x7f c1\x80\x9f nel\x85 ls\u2028 ps\u2029 nonchar\ufffe\uffff"
    body = json_body({"v": value})
    for raw in ("\x7f", "\x80", "\x85", "\x9f", "\u2028", "\u2029", "\ufffe", "\uffff"):
        assert raw.encode() not in body  # refused raw, or read as a line break, by YAML
    assert json.loads(body) == {"v": value}


def test_every_body_reads_the_same_as_yaml() -> None:
    """The API server decodes apply bodies as YAML; the JSON must mean the same there."""
    for value in ("🚀 𠜎 🛰", "ctl\x01\x1f\x7f\x9f", 'quote " back \\ slash', "\u2028\u2029"):
        assert yaml.safe_load(json_body({"v": value}).decode()) == {"v": value}
